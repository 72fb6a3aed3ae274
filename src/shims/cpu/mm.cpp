// aoti_torch_cpu_{mm,addmm,bmm}_out: the matrix-multiply fallbacks Inductor
// emits for linear layers and batched matmuls it does not generate itself.
// float32/float64 go straight to BLAS on the tensors' own memory; bfloat16 and
// float16 are widened to float32, multiplied, and rounded once on store;
// integer and complex dtypes take a plain loop (ATen multiplies those too).
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "shims/cpu/cpu_shims.h"
#include "devices/cpu/element_buffer.h"
#include "devices/cpu/float_io.h"
#include "devices/cpu/gemm.h"
#include "devices/cpu/packed_gemm.h"
#include "devices/cpu/packed_weights.h"
#include "devices/cpu/parallel_for.h"
#include "devices/cpu/small_gemm.h"
#include "shims/cpu/matmul.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::aoti;
using namespace kiln::cpu;

namespace {

template <typename T>
MatrixView<T> matrix(const Tensor& t, int64_t batch_dims, int64_t batch = 0) {
  const int64_t r = batch_dims, c = batch_dims + 1;
  T* base = static_cast<T*>(t.data_ptr()) + (batch_dims ? batch * t.stride(0) : 0);
  return {base, t.size(r), t.size(c), t.stride(r), t.stride(c)};
}
template <typename T>
MatrixView<const T> cmatrix(const Tensor& t, int64_t batch_dims, int64_t batch = 0) {
  auto m = matrix<T>(t, batch_dims, batch);
  return {m.data, m.rows, m.cols, m.row_stride, m.col_stride};
}

// Rows of A at least this many go to packed_gemm; fewer are streamed against
// the weight as it lies (small_gemm.h), which reads it once and packs nothing.
constexpr int64_t kPackedMinRows = kSmallGemmMaxRows + 1;
// A block of the split product has at least this many multiply-adds (as gemm.cpp).
constexpr int64_t kMinBlockMacs = int64_t{1} << 17;

// out = a @ b (+ init's row) with b a view of a program constant, through the
// packing kept with it (packed_weights.h): a linear layer's weight, which
// OpenBLAS would pack again on every call. False (nothing done) when the
// operands do not have that shape: b not constant, rows of a or out not
// unit-stride, init other than a broadcast row added once, too few rows.
bool packed_linear(const Tensor& out, const Tensor* init, const Tensor& a, const Tensor& b, double beta,
                   double alpha) {
  const int64_t m = out.size(0), n = out.size(1), k = a.size(1);
  if (alpha != 1.0 || m < kPackedMinRows || k == 0 || !b.storage()) return false;
  if (!(a.stride(1) == 1 && out.stride(1) == 1 && a.stride(0) >= k && out.stride(0) >= n)) return false;
  const float* bias = nullptr;
  if (init && beta != 0.0) {
    if (beta != 1.0 || init->stride(0) != 0 || init->stride(1) != 1) return false;
    bias = init->data<const float>();
  }
  std::shared_ptr<const PackedWeight> packing =
      packed_weight(*b.storage(), b.data<const float>(), 1, 0, k, n, b.stride(0), b.stride(1));
  if (!packing) return false;
  const float* ad = a.data<const float>();
  float* cd = out.data<float>();
  const int64_t lda = a.stride(0), ldc = out.stride(0);
  // Split the columns in whole panels (each thread reads its share of the weight once); a product
  // with fewer panels than threads splits its rows instead.
  const int64_t panels = (n + kPackedPanelCols - 1) / kPackedPanelCols;
  const int threads = parallel_threads();
  const double panel_macs = static_cast<double>(m) * static_cast<double>(kPackedPanelCols) * static_cast<double>(k);
  if (panels >= threads) {
    const auto grain = static_cast<int64_t>(std::ceil(static_cast<double>(kMinBlockMacs) / panel_macs));
    (void)parallel_for(panels, grain, [&](int64_t begin, int64_t end) -> Error {
      const int64_t j0 = begin * kPackedPanelCols, j1 = std::min(end * kPackedPanelCols, n);
      packed_gemm(m, j1 - j0, k, ad, lda, packing->panels(0, j0, k), bias ? bias + j0 : nullptr, cd + j0, ldc);
      return Error::Ok;
    });
  } else {
    constexpr int64_t kRowStep = kPackedTileRows;
    const int64_t steps = (m + kRowStep - 1) / kRowStep;
    const double step_macs = static_cast<double>(kRowStep) * static_cast<double>(n) * static_cast<double>(k);
    const auto grain = static_cast<int64_t>(std::ceil(static_cast<double>(kMinBlockMacs) / step_macs));
    (void)parallel_for(steps, grain, [&](int64_t begin, int64_t end) -> Error {
      const int64_t i0 = begin * kRowStep, i1 = std::min(end * kRowStep, m);
      packed_gemm(i1 - i0, n, k, ad + i0 * lda, lda, packing->panels(0, 0, k), bias, cd + i0 * ldc, ldc);
      return Error::Ok;
    });
  }
  return true;
}

}  // namespace

Error kiln::cpu::matmul(const Tensor& out, const Tensor* init, const Tensor& a, const Tensor& b, double beta,
                        double alpha, int64_t batch_dims) {
  const int64_t batches = batch_dims ? out.size(0) : 1;
  const DType dt = out.dtype();
  if (dt == DType::Float32 || dt == DType::Float64) {
    if (dt == DType::Float32 && batch_dims == 0 && packed_linear(out, init, a, b, beta, alpha)) return Error::Ok;
    if (beta != 0.0 && init) {
      // Seed C with init; copying a tensor onto itself (addmm_ in place) is harmless.
      KILN_RETURN_IF_ERROR(copy_tensor(out, *init));
    }
    for (int64_t i = 0; i < batches; ++i) {
      Error e = dt == DType::Float32
                    ? gemm<float>(cmatrix<float>(a, batch_dims, i), cmatrix<float>(b, batch_dims, i),
                                  matrix<float>(out, batch_dims, i), static_cast<float>(alpha),
                                  static_cast<float>(init ? beta : 0.0))
                    : gemm<double>(cmatrix<double>(a, batch_dims, i), cmatrix<double>(b, batch_dims, i),
                                   matrix<double>(out, batch_dims, i), alpha, init ? beta : 0.0);
      KILN_RETURN_IF_ERROR(e);
    }
    return Error::Ok;
  }
  if (dt == DType::BFloat16 || dt == DType::Float16) {
    std::vector<float> fa = to_floats(a), fb = to_floats(b);
    std::vector<float> fc(static_cast<size_t>(out.numel()), 0.0f);
    const bool seed = beta != 0.0 && init;
    if (seed) load_floats(*init, fc.data());
    const int64_t m = out.size(batch_dims), n = out.size(batch_dims + 1), k = a.size(batch_dims + 1);
    for (int64_t i = 0; i < batches; ++i) {
      KILN_RETURN_IF_ERROR(gemm<float>({fa.data() + i * m * k, m, k, k, 1}, {fb.data() + i * k * n, k, n, n, 1},
                                       {fc.data() + i * m * n, m, n, n, 1}, static_cast<float>(alpha),
                                       static_cast<float>(seed ? beta : 0.0)));
    }
    store_floats(fc.data(), out);
    return Error::Ok;
  }
  if (dt == DType::Bool || !(is_integral(dt) || is_complex(dt)))
    return set_error(Error::NotSupported, std::string("dtype ") + dtype_name(dt) + " is not supported");
  // Integers and complex numbers: no BLAS; a plain loop in int64 (wrapping, alpha and beta
  // truncated to integers as ATen's Scalar conversion does) or complex<double>.
  return visit_kind(dt, [&](auto tag) -> Error {
    using T = decltype(tag);
    const T al = is_integral(dt) ? T(static_cast<int64_t>(alpha)) : T(alpha);
    const T be = is_integral(dt) ? T(static_cast<int64_t>(beta)) : T(beta);
    const bool seed = beta != 0.0 && init;
    const std::vector<T> va = read_elements<T>(a), vb = read_elements<T>(b);
    std::vector<T> vc =
        seed ? read_elements<T>(*init) : std::vector<T>(static_cast<size_t>(out.numel()), T(0));
    const int64_t m = out.size(batch_dims), n = out.size(batch_dims + 1), k = a.size(batch_dims + 1);
    for (int64_t i = 0; i < batches; ++i) {
      const T* pa = va.data() + i * m * k;
      const T* pb = vb.data() + i * k * n;
      T* pc = vc.data() + i * m * n;
      std::vector<T> row(static_cast<size_t>(n));
      for (int64_t r = 0; r < m; ++r) {
        std::fill(row.begin(), row.end(), T(0));
        for (int64_t q = 0; q < k; ++q) {
          const T x = pa[r * k + q];
          for (int64_t c = 0; c < n; ++c) row[c] = wrap_add(row[c], wrap_mul(x, pb[q * n + c]));
        }
        for (int64_t c = 0; c < n; ++c) {
          const T prod = wrap_mul(al, row[c]);
          pc[r * n + c] = seed ? wrap_add(wrap_mul(be, pc[r * n + c]), prod) : prod;
        }
      }
    }
    write_elements(vc.data(), out);
    return Error::Ok;
  });
}

namespace {

struct Operands {
  Tensor* out;
  Tensor* a;
  Tensor* b;
};

// Checks out = a @ b shapes for rank 2 (mm) or 3 (bmm) and a common dtype.
Result<Operands> check_matmul(AtenTensorHandle out_h, AtenTensorHandle a_h, AtenTensorHandle b_h, const char* a_name,
                              const char* b_name, int64_t rank) {
  KILN_ASSIGN_OR_RETURN(Tensor * out, cpu_tensor_arg(out_h, "out"));
  KILN_ASSIGN_OR_RETURN(Tensor * a, cpu_tensor_arg(a_h, a_name));
  KILN_ASSIGN_OR_RETURN(Tensor * b, cpu_tensor_arg(b_h, b_name));
  if (a->dim() != rank || b->dim() != rank || out->dim() != rank)
    return invalid("expected " + std::to_string(rank) + "-d tensors, got " + a_name + " " + a->describe() + ", " +
                   b_name + " " + b->describe() + ", out " + out->describe());
  const int64_t o = rank - 2;
  const bool batch_ok = rank == 2 || (a->size(0) == b->size(0) && a->size(0) == out->size(0));
  if (!batch_ok || a->size(o + 1) != b->size(o) || out->size(o) != a->size(o) || out->size(o + 1) != b->size(o + 1))
    return invalid("shape mismatch: " + std::string(a_name) + " " + shape_string(a->sizes()) + " @ " + b_name + " " +
                   shape_string(b->sizes()) + " -> out " + shape_string(out->sizes()));
  KILN_RETURN_IF_ERROR(same_dtype(*a, out->dtype(), a_name));
  KILN_RETURN_IF_ERROR(same_dtype(*b, out->dtype(), b_name));
  return Operands{out, a, b};
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                      AtenTensorHandle mat2) {
  return guarded("aoti_torch_cpu_mm_out", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Operands ops, check_matmul(out, self, mat2, "self", "mat2", 2));
    return matmul(*ops.out, nullptr, *ops.a, *ops.b, 0.0, 1.0, 0);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                         AtenTensorHandle mat1, AtenTensorHandle mat2, double beta,
                                                         double alpha) {
  return guarded("aoti_torch_cpu_addmm_out", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Operands ops, check_matmul(out, mat1, mat2, "mat1", "mat2", 2));
    KILN_ASSIGN_OR_RETURN(Tensor * s, cpu_tensor_arg(self, "self"));
    KILN_RETURN_IF_ERROR(same_dtype(*s, ops.out->dtype(), "self"));
    KILN_ASSIGN_OR_RETURN(Tensor init, broadcast_view(*s, ops.out->sizes(), "self"));
    return matmul(*ops.out, &init, *ops.a, *ops.b, beta, alpha, 0);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_bmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                       AtenTensorHandle mat2) {
  return guarded("aoti_torch_cpu_bmm_out", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Operands ops, check_matmul(out, self, mat2, "self", "mat2", 3));
    return matmul(*ops.out, nullptr, *ops.a, *ops.b, 0.0, 1.0, 1);
  });
}

}  // extern "C"
