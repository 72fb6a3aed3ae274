#include "devices/cpu/gemm.h"

#include "devices/cpu/blas_library.h"
#include "devices/cpu/parallel_for.h"
#include "devices/cpu/small_gemm.h"

#include <algorithm>
#include <cmath>
#include <climits>
#include <string>
#include <type_traits>
#include <vector>

namespace kiln::cpu {

namespace {

void gemm_call(const BlasFunctions& f, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha,
               const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  f.sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm_call(const BlasFunctions& f, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha,
               const double* a, int lda, const double* b, int ldb, double beta, double* c, int ldc) {
  f.dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
bool has_gemv(const BlasFunctions& f, float) { return f.sgemv != nullptr; }
bool has_gemv(const BlasFunctions& f, double) { return f.dgemv != nullptr; }
void gemv_call(const BlasFunctions& f, CBLAS_TRANSPOSE t, int rows, int cols, float alpha, const float* a, int lda,
               const float* x, int incx, float beta, float* y, int incy) {
  f.sgemv(CblasRowMajor, t, rows, cols, alpha, a, lda, x, incx, beta, y, incy);
}
void gemv_call(const BlasFunctions& f, CBLAS_TRANSPOSE t, int rows, int cols, double alpha, const double* a,
               int lda, const double* x, int incx, double beta, double* y, int incy) {
  f.dgemv(CblasRowMajor, t, rows, cols, alpha, a, lda, x, incx, beta, y, incy);
}

// C (m x n, row stride ldc) = alpha * op(A) @ op(B) + beta * C, as cblas_?gemm
// in row-major order. A product with one row or one column is a
// matrix-vector product, and goes to GEMV: OpenBLAS's GEMM first packs the
// whole matrix operand into its panel layout (sgemm_incopy), which for the
// M = 1 products of a decode step costs about as much as the product. A
// full-size Whisper decoder step on one thread took 38.5 ms against 25.5 ms
// in PyTorch's loader, whose matmul calls GEMV there.
template <typename T>
void blas_gemm(const BlasFunctions& f, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, T alpha,
               const T* a, int lda, const T* b, int ldb, T beta, T* c, int ldc) {
  if ((m == 1 || n == 1) && has_gemv(f, T())) {
    // y: C's row (m == 1) or column (n == 1). With beta == 0 it is zeroed
    // first: C's old values must not leak, and a BLAS that scales y by beta
    // would turn NaNs there into 0 * NaN.
    const int len = m == 1 ? n : m, incy = m == 1 ? 1 : ldc;
    if (beta == T(0))
      for (int i = 0; i < len; ++i) c[static_cast<int64_t>(i) * incy] = T(0);
    if (m == 1) {
      // x: A's only row, contiguous as stored, or a column of the stored A^T.
      const int incx = ta == CblasNoTrans ? 1 : lda;
      if (tb == CblasNoTrans)
        gemv_call(f, CblasTrans, k, n, alpha, b, ldb, a, incx, beta, c, incy);  // y = B^T x; B stored k x n
      else
        gemv_call(f, CblasNoTrans, n, k, alpha, b, ldb, a, incx, beta, c, incy);  // B^T stored n x k
    } else {
      // x: B's only column, a column of the stored B, or the stored B^T's row.
      const int incx = tb == CblasNoTrans ? ldb : 1;
      if (ta == CblasNoTrans)
        gemv_call(f, CblasNoTrans, m, k, alpha, a, lda, b, incx, beta, c, incy);  // y = A x; A stored m x k
      else
        gemv_call(f, CblasTrans, k, m, alpha, a, lda, b, incx, beta, c, incy);  // A^T stored k x m
    }
    return;
  }
  gemm_call(f, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Row-major with unit column stride: usable as a NoTrans operand with this ld.
bool row_major(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int64_t* ld) {
  if (!(cols <= 1 || cs == 1)) return false;
  if (rows <= 1) {
    *ld = std::max<int64_t>(cols, 1);
    return true;
  }
  if (rs < std::max<int64_t>(cols, 1)) return false;
  *ld = rs;
  return true;
}

template <typename T>
struct Operand {
  const T* data;
  CBLAS_TRANSPOSE trans;
  int64_t ld;
  std::vector<T> packed;
};

// Chooses how BLAS reads `m`: as stored, as the transpose of a row-major
// matrix, or packed into a contiguous copy.
template <typename T>
void prepare(MatrixView<const T> m, Operand<T>& op) {
  int64_t ld = 0;
  if (row_major(m.rows, m.cols, m.row_stride, m.col_stride, &ld)) {
    op = {m.data, CblasNoTrans, ld, {}};
  } else if (row_major(m.cols, m.rows, m.col_stride, m.row_stride, &ld)) {
    op = {m.data, CblasTrans, ld, {}};
  } else {
    op.packed.resize(static_cast<size_t>(m.rows * m.cols));
    for (int64_t i = 0; i < m.rows; ++i)
      for (int64_t j = 0; j < m.cols; ++j) op.packed[i * m.cols + j] = m.data[i * m.row_stride + j * m.col_stride];
    op.data = op.packed.data();
    op.trans = CblasNoTrans;
    op.ld = std::max<int64_t>(m.cols, 1);
  }
}

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

// Products up to this many multiply-adds (e.g. 128x256 @ 256x64, tens of
// microseconds on one core) never use OpenBLAS's own threading: its threaded
// GEMM synchronises its threads with busy-waits several times per call, which
// costs more than it saves at this size and stalls for whole scheduler slices
// when the CPUs are shared with other work. They are split instead into
// independent row (or column) blocks over the model call's OpenMP team
// (parallel_for), one single-threaded BLAS call per block, with the region's
// one join as the only synchronisation.
constexpr int64_t kSerialGemmMacs = int64_t{1} << 21;
// A split block has at least this many multiply-adds (a few microseconds):
// below that, opening the parallel region costs about what it saves.
constexpr int64_t kMinBlockMacs = int64_t{1} << 17;
// Blocks are whole multiples of this many rows (columns): the SGEMM
// micro-kernels' register tiles, so blocks do not end in partial tiles.
constexpr int64_t kSplitAlign = 16;

// While alive, the OpenMP BLAS runs on the calling thread only (when `serial`
// and the BLAS threads with OpenMP).
class SerialBlasScope {
 public:
  SerialBlasScope(const BlasFunctions& f, bool serial) {
    if (!serial || !f.omp_get_max_threads) return;
    previous_ = f.omp_get_max_threads();
    if (previous_ > 1) {
      set_ = f.omp_set_num_threads;
      set_(1);
    }
  }
  ~SerialBlasScope() {
    if (set_) set_(previous_);
  }
  SerialBlasScope(const SerialBlasScope&) = delete;
  SerialBlasScope& operator=(const SerialBlasScope&) = delete;

 private:
  void (*set_)(int) = nullptr;
  int previous_ = 1;
};

// C = alpha * A @ B + beta * C on operands BLAS can read as they are; small
// products are split over the model call's threads.
template <typename T>
Error run_blas(const BlasFunctions& f, const Operand<T>& a, const Operand<T>& b, T* c, int64_t ldc, int64_t m,
               int64_t n, int64_t k, T alpha, T beta) {
  if constexpr (std::is_same_v<T, float>) {
    // A few rows against a weight stored n x k (a linear layer on a short input): the
    // weight is streamed once instead of packed per call (small_gemm.h), its rows split
    // in blocks over the model call's threads.
    if (m >= 2 && m <= kSmallGemmMaxRows && a.trans == CblasNoTrans && b.trans == CblasTrans &&
        small_gemm_available()) {
      const int64_t blocks = (n + kSplitAlign - 1) / kSplitAlign;
      const double block_macs = static_cast<double>(m) * static_cast<double>(kSplitAlign) * static_cast<double>(k);
      const auto grain = static_cast<int64_t>(std::ceil(static_cast<double>(kMinBlockMacs) / block_macs));
      return parallel_for(blocks, grain, [&](int64_t begin, int64_t end) -> Error {
        const int64_t lo = begin * kSplitAlign, hi = std::min(end * kSplitAlign, n);
        small_gemm(m, hi - lo, k, alpha, a.data, a.ld, b.data + lo * b.ld, b.ld, beta, c + lo, ldc);
        return Error::Ok;
      });
    }
  }
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const bool small = macs <= static_cast<double>(kSerialGemmMacs);
  const int threads = small ? parallel_threads() : 1;
  if (threads > 1 && macs >= 2.0 * static_cast<double>(kMinBlockMacs)) {
    // Split the longer of C's two sides into blocks of kSplitAlign.
    const bool by_rows = m >= n;
    const int64_t side = by_rows ? m : n;
    const int64_t blocks = (side + kSplitAlign - 1) / kSplitAlign;
    const double block_macs = macs * static_cast<double>(kSplitAlign) / static_cast<double>(side);
    const auto grain = static_cast<int64_t>(std::ceil(static_cast<double>(kMinBlockMacs) / block_macs));
    return parallel_for(blocks, grain, [&](int64_t begin, int64_t end) -> Error {
      const int64_t lo = begin * kSplitAlign, hi = std::min(end * kSplitAlign, side);
      const SerialBlasScope serial(f, true);
      if (by_rows) {
        // Rows lo..hi of A and C. A stored transposed (column i of the stored matrix is row i of A) starts at
        // column lo.
        const T* ad = a.trans == CblasNoTrans ? a.data + lo * a.ld : a.data + lo;
        blas_gemm(f, a.trans, b.trans, static_cast<int>(hi - lo), static_cast<int>(n), static_cast<int>(k), alpha,
                  ad, static_cast<int>(a.ld), b.data, static_cast<int>(b.ld), beta, c + lo * ldc,
                  static_cast<int>(ldc));
      } else {
        // Columns lo..hi of B and C.
        const T* bd = b.trans == CblasNoTrans ? b.data + lo : b.data + lo * b.ld;
        blas_gemm(f, a.trans, b.trans, static_cast<int>(m), static_cast<int>(hi - lo), static_cast<int>(k), alpha,
                  a.data, static_cast<int>(a.ld), bd, static_cast<int>(b.ld), beta, c + lo, static_cast<int>(ldc));
      }
      return Error::Ok;
    });
  }
  // Large products follow the OpenMP count of the calling thread (the model's), except inside a parallel
  // region, where each call is one thread's share of the work.
  const SerialBlasScope serial(f, small || inside_parallel_region());
  blas_gemm(f, a.trans, b.trans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a.data,
            static_cast<int>(a.ld), b.data, static_cast<int>(b.ld), beta, c, static_cast<int>(ldc));
  return Error::Ok;
}

}  // namespace

template <typename T>
Error gemm(MatrixView<const T> a, MatrixView<const T> b, MatrixView<T> c, T alpha, T beta) {
  if (a.rows != c.rows || a.cols != b.rows || b.cols != c.cols)
    return set_error(Error::InvalidArgument, "gemm: shape mismatch");
  const int64_t m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0) return Error::Ok;
  int64_t ldc = 0;
  if (!row_major(m, n, c.row_stride, c.col_stride, &ldc)) {
    int64_t ldt = 0;
    if (row_major(n, m, c.col_stride, c.row_stride, &ldt)) {
      // C is column-major: compute C^T = B^T @ A^T, which is row-major.
      return gemm<T>(b.transposed(), a.transposed(), c.transposed(), alpha, beta);
    }
    // Scattered C: compute into a packed copy and scatter back.
    std::vector<T> tmp(static_cast<size_t>(m * n), T(0));
    if (beta != T(0))
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) tmp[i * n + j] = c.data[i * c.row_stride + j * c.col_stride];
    KILN_RETURN_IF_ERROR(gemm<T>(a, b, MatrixView<T>{tmp.data(), m, n, n, 1}, alpha, beta));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c.data[i * c.row_stride + j * c.col_stride] = tmp[i * n + j];
    return Error::Ok;
  }
  if (k == 0) {
    // Empty reduction: C = beta * C (beta 0 overwrites).
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        T& v = c.data[i * c.row_stride + j * c.col_stride];
        v = beta == T(0) ? T(0) : beta * v;
      }
    return Error::Ok;
  }
  Operand<T> oa, ob;
  prepare(a, oa);
  prepare(b, ob);
  if (!fits_int(m) || !fits_int(n) || !fits_int(k) || !fits_int(oa.ld) || !fits_int(ob.ld) || !fits_int(ldc))
    return set_error(Error::InvalidArgument, "matrix of " + std::to_string(m) + "x" + std::to_string(k) + " @ " +
                                                 std::to_string(k) + "x" + std::to_string(n) +
                                                 " exceeds BLAS's 32-bit dimensions");
  KILN_ASSIGN_OR_RETURN(const BlasFunctions* functions, blas());
  return run_blas<T>(*functions, oa, ob, c.data, ldc, m, n, k, alpha, beta);
}

template Error gemm<float>(MatrixView<const float>, MatrixView<const float>, MatrixView<float>, float, float);
template Error gemm<double>(MatrixView<const double>, MatrixView<const double>, MatrixView<double>, double, double);

}  // namespace kiln::cpu
