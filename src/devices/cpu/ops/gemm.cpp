#include "devices/cpu/ops/gemm.h"

#include "devices/cpu/ops/blas_library.h"

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

namespace kiln::cpu {

namespace {

void blas_gemm(const BlasFunctions& f, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha,
               const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  f.sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void blas_gemm(const BlasFunctions& f, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha,
               const double* a, int lda, const double* b, int ldb, double beta, double* c, int ldc) {
  f.dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
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
// microseconds on one core) run on the calling thread alone: OpenBLAS's
// threaded GEMM synchronises its threads with busy-waits several times per
// call, which costs more than it saves at this size and stalls for whole
// scheduler slices when the CPUs are shared with other work.
constexpr int64_t kSerialGemmMacs = int64_t{1} << 21;

// While alive, the OpenMP BLAS runs on the calling thread only (when the
// product is small and the BLAS threads with OpenMP).
class SerialBlasScope {
 public:
  SerialBlasScope(const BlasFunctions& f, double macs) {
    if (macs > static_cast<double>(kSerialGemmMacs) || !f.omp_get_max_threads) return;
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
  const SerialBlasScope serial(*functions, static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k));
  blas_gemm(*functions, oa.trans, ob.trans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, oa.data,
            static_cast<int>(oa.ld), ob.data, static_cast<int>(ob.ld), beta, c.data, static_cast<int>(ldc));
  return Error::Ok;
}

template Error gemm<float>(MatrixView<const float>, MatrixView<const float>, MatrixView<float>, float, float);
template Error gemm<double>(MatrixView<const double>, MatrixView<const double>, MatrixView<double>, double, double);

}  // namespace kiln::cpu
