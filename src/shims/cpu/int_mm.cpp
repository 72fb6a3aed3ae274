// aoti_torch_cpu__int_mm_out and aoti_torch_cpu__weight_int8pack_mm: the
// integer products of int8-quantized models. _int_mm: int8 @ int8 summed in
// int32 (wrapping, as ATen). _weight_int8pack_mm: activations (float32,
// bfloat16 or float16) times an int8 weight stored (N, K), scaled per output
// column, summed in float32 and rounded once to the activations' dtype: few
// rows (decode) stream the int8 weight once, row by row; more rows go through
// the float32 GEMM in blocks of weight rows widened to float32. Kiln's op
// kiln::int8_linear (aoti_torch_cpu_int8_linear) is the same product over
// the rows of an x of any rank.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "devices/cpu/float_io.h"
#include "devices/cpu/gemm.h"
#include "devices/cpu/parallel_for.h"
#include "devices/cpu/quantized_rows.h"
#include "devices/cpu/small_gemm.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"
#include "shims/common/int_mm_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

// The elements of an int8 matrix (any strides) as row-major int32.
std::vector<int32_t> int8_matrix(const Tensor& t) {
  const int64_t rows = t.size(0), cols = t.size(1);
  std::vector<int32_t> v(static_cast<size_t>(rows * cols));
  const int8_t* p = t.data<int8_t>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) v[i * cols + j] = p[i * t.stride(0) + j * t.stride(1)];
  return v;
}

// Weight rows a prefill block widens to float32 (1 MiB a thread at K = 4096);
// fixed, so a result does not depend on the thread count.
constexpr int64_t kBlockRows = 64;

// Row n of an int8 weight [N, K]: its own memory when unit-stride along K,
// else gathered into `scratch`.
const int8_t* int8_weight_row(const Tensor& w, int64_t n, std::vector<int8_t>& scratch) {
  const int8_t* row = w.data<int8_t>() + n * w.stride(0);
  const int64_t s1 = w.stride(1), k = w.size(1);
  if (s1 == 1 || k <= 1) return row;
  scratch.resize(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j) scratch[static_cast<size_t>(j)] = row[j * s1];
  return scratch.data();
}

// Few rows (decode): the int8 weight streamed once, each row dotted with
// every activation row straight from its bytes; out = x @ w^T (unscaled).
Error int8_few_rows(const Tensor& w, const float* x, int64_t m, float* out) {
  const int64_t n = w.size(0), k = w.size(1);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / k);
  return parallel_for(n, grain, [&](int64_t begin, int64_t end) -> Error {
    std::vector<int8_t> scratch;
    float acc[kQuantizedDotMaxRows];
    for (int64_t j = begin; j < end; ++j) {
      int8_dot_rows(int8_weight_row(w, j, scratch), k, x, k, m, acc);
      for (int64_t i = 0; i < m; ++i) out[i * n + j] = acc[i];
    }
    return Error::Ok;
  });
}

// The same with a scale per group of `group` inputs (scales [n, k / group]):
// each group's float32 dot times its scale, summed; out is final.
Error int8_few_rows_grouped(const Tensor& w, const float* x, int64_t m, const float* scales, int64_t group,
                            float* out) {
  const int64_t n = w.size(0), k = w.size(1), groups = k / group;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / k);
  return parallel_for(n, grain, [&](int64_t begin, int64_t end) -> Error {
    std::vector<int8_t> scratch;
    float acc[kQuantizedDotMaxRows], total[kQuantizedDotMaxRows];
    for (int64_t j = begin; j < end; ++j) {
      const int8_t* row = int8_weight_row(w, j, scratch);
      std::fill(total, total + m, 0.0f);
      for (int64_t g = 0; g < groups; ++g) {
        int8_dot_rows(row + g * group, group, x + g * group, k, m, acc);
        const float scale = scales[j * groups + g];
        for (int64_t i = 0; i < m; ++i) total[i] += acc[i] * scale;
      }
      for (int64_t i = 0; i < m; ++i) out[i * n + j] = total[i];
    }
    return Error::Ok;
  });
}

// More rows (prefill): blocks of weight rows widened to float32 in a
// per-thread buffer, one GEMM per block; never the whole weight as floats.
// With `scales` (a scale per group of `group` inputs, [n, k / group]) the
// widened rows are scaled before the GEMM and out is final.
Error int8_many_rows(const Tensor& w, const float* x, int64_t m, float* out, const float* scales = nullptr,
                     int64_t group = 0) {
  const int64_t n = w.size(0), k = w.size(1);
  const int64_t block = kBlockRows;
  const int64_t blocks = (n + block - 1) / block;
  const bool small = m <= kSmallGemmMaxRows && small_gemm_available();
  return parallel_for(blocks, 1, [&](int64_t begin, int64_t end) -> Error {
    std::vector<int8_t> scratch;
    std::vector<float> fw(static_cast<size_t>(std::min(block, n) * k));
    for (int64_t b = begin; b < end; ++b) {
      const int64_t n0 = b * block, nb = std::min(block, n - n0);
      for (int64_t j = 0; j < nb; ++j) {
        float* row = fw.data() + j * k;
        int8_to_float(int8_weight_row(w, n0 + j, scratch), k, row);
        if (scales != nullptr) {
          const int64_t groups = k / group;
          for (int64_t g = 0; g < groups; ++g) {
            const float scale = scales[(n0 + j) * groups + g];
            for (int64_t i = g * group; i < (g + 1) * group; ++i) row[i] *= scale;
          }
        }
      }
      if (small) {
        small_gemm(m, nb, k, 1.0f, x, k, fw.data(), k, 0.0f, out + n0, n);
      } else {
        const MatrixView<const float> wt{fw.data(), nb, k, k, 1};
        KILN_RETURN_IF_ERROR(gemm<float>({x, m, k, k, 1}, wt.transposed(), {out + n0, m, nb, n, 1}, 1.0f, 0.0f));
      }
    }
    return Error::Ok;
  });
}

// result [m, n] (any shape of m * n elements, contiguous, x's dtype) = the
// contiguous float32 rows x [m, k] @ W^T, W[j, i] = w[j, i] * sc[j, i / group]
// (sc [n, k / group]); group == k is _weight_int8pack_mm's scale per column,
// which multiplies the finished float32 sum as ATen's kernel does.
Error int8pack_into(const float* x, int64_t m, int64_t k, const Tensor& w, const Tensor& sc, int64_t group,
                    Tensor& result) {
  const int64_t n = w.size(0);
  const std::vector<float> fs = to_floats(sc);
  std::vector<float> fc(static_cast<size_t>(m * n));
  const bool per_row = group == k;
  if (k == 0) {
    std::fill(fc.begin(), fc.end(), 0.0f);
  } else if (!per_row) {
    if (m <= kQuantizedDotMaxRows)
      KILN_RETURN_IF_ERROR(int8_few_rows_grouped(w, x, m, fs.data(), group, fc.data()));
    else
      KILN_RETURN_IF_ERROR(int8_many_rows(w, x, m, fc.data(), fs.data(), group));
  } else if (m <= kQuantizedDotMaxRows) {
    KILN_RETURN_IF_ERROR(int8_few_rows(w, x, m, fc.data()));
  } else {
    KILN_RETURN_IF_ERROR(int8_many_rows(w, x, m, fc.data()));
  }
  if (per_row) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) fc[i * n + j] *= fs[j];
  }
  store_floats(fc.data(), result);
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__int_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                           AtenTensorHandle mat2) {
  return aoti::guarded("aoti_torch_cpu__int_mm_out", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * o, cpu_tensor_arg(out, "out"));
    KILN_ASSIGN_OR_RETURN(Tensor * a, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * b, cpu_tensor_arg(mat2, "mat2"));
    KILN_RETURN_IF_ERROR(
        aoti::int_mm_args(a->dtype(), a->sizes(), b->dtype(), b->sizes(), o->dtype(), o->sizes()));
    const int64_t m = a->size(0), k = a->size(1), n = b->size(1);
    const std::vector<int32_t> va = int8_matrix(*a), vb = int8_matrix(*b);
    int32_t* po = o->data<int32_t>();
    const int64_t so0 = o->stride(0), so1 = o->stride(1);
    return parallel_for(m, 8, [&](int64_t begin, int64_t end) -> Error {
      std::vector<uint32_t> row(static_cast<size_t>(n));
      for (int64_t i = begin; i < end; ++i) {
        std::fill(row.begin(), row.end(), 0u);
        for (int64_t q = 0; q < k; ++q) {
          const uint32_t x = static_cast<uint32_t>(va[i * k + q]);
          if (x == 0) continue;
          const int32_t* br = vb.data() + q * n;
          for (int64_t j = 0; j < n; ++j) row[j] += x * static_cast<uint32_t>(br[j]);
        }
        for (int64_t j = 0; j < n; ++j) po[i * so0 + j * so1] = static_cast<int32_t>(row[j]);
      }
      return Error::Ok;
    });
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu__weight_int8pack_mm(AtenTensorHandle self, AtenTensorHandle mat2,
                                                                   AtenTensorHandle scales, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu__weight_int8pack_mm", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * a, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * w, cpu_tensor_arg(mat2, "mat2"));
    KILN_ASSIGN_OR_RETURN(Tensor * sc, cpu_tensor_arg(scales, "scales"));
    const DType dt = a->dtype();
    KILN_RETURN_IF_ERROR(
        aoti::weight_int8pack_args(dt, a->sizes(), w->dtype(), w->sizes(), sc->dtype(), sc->sizes()));
    const int64_t m = a->size(0), k = a->size(1), n = w->size(0);
    KILN_ASSIGN_OR_RETURN(Tensor result, new_cpu_tensor(std::vector<int64_t>{m, n}, dt));
    if (result.numel() == 0) return return_tensor(std::move(result), ret0, "ret0");
    std::vector<float> x_scratch;
    KILN_RETURN_IF_ERROR(int8pack_into(contiguous_floats(*a, x_scratch), m, k, *w, *sc, k, result));
    return return_tensor(std::move(result), ret0, "ret0");
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_int8_linear(AtenTensorHandle x_h, AtenTensorHandle weight_h,
                                                           AtenTensorHandle scales_h, int64_t group_size,
                                                           AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_int8_linear", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * x, cpu_tensor_arg(x_h, "x"));
    KILN_ASSIGN_OR_RETURN(Tensor * w, cpu_tensor_arg(weight_h, "weight"));
    KILN_ASSIGN_OR_RETURN(Tensor * sc, cpu_tensor_arg(scales_h, "scales"));
    KILN_ASSIGN_OR_RETURN(aoti::Int8LinearPlan plan,
                          aoti::int8_linear_plan(x->dtype(), x->sizes(), w->dtype(), w->sizes(), sc->dtype(),
                                                 sc->sizes(), group_size));
    KILN_ASSIGN_OR_RETURN(Tensor result, new_cpu_tensor(plan.out_sizes, x->dtype()));
    if (result.numel() == 0) return return_tensor(std::move(result), ret0, "ret0");
    std::vector<float> x_scratch;  // x's elements in order: its rows [rows, K] contiguous
    KILN_RETURN_IF_ERROR(
        int8pack_into(contiguous_floats(*x, x_scratch), plan.rows, plan.k, *w, *sc, group_size, result));
    return return_tensor(std::move(result), ret0, "ret0");
  });
}

}  // extern "C"
