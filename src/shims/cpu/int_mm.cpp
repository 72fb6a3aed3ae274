// aoti_torch_cpu__int_mm_out and aoti_torch_cpu__weight_int8pack_mm: the
// integer products of int8-quantized models. _int_mm: int8 @ int8 summed in
// int32 (wrapping, as ATen). _weight_int8pack_mm: activations (float32,
// bfloat16 or float16) times an int8 weight stored (N, K), scaled per output
// column, in float32 through BLAS and rounded once to the activations' dtype.
#include <cstring>
#include <string>
#include <vector>

#include "devices/cpu/float_io.h"
#include "devices/cpu/gemm.h"
#include "devices/cpu/parallel_for.h"
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
    std::vector<float> fa = to_floats(*a), fs = to_floats(*sc);
    std::vector<float> fw(static_cast<size_t>(n * k));
    const int8_t* pw = w->data<int8_t>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) fw[i * k + j] = pw[i * w->stride(0) + j * w->stride(1)];
    std::vector<float> fc(static_cast<size_t>(m * n));
    const MatrixView<const float> wt{fw.data(), n, k, k, 1};
    KILN_RETURN_IF_ERROR(gemm<float>({fa.data(), m, k, k, 1}, wt.transposed(), {fc.data(), m, n, n, 1}, 1.0f, 0.0f));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) fc[i * n + j] *= fs[j];
    store_floats(fc.data(), result);
    return return_tensor(std::move(result), ret0, "ret0");
  });
}

}  // extern "C"
