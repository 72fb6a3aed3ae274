// aoti_torch_cuda_mm_dtype_out: out = self @ mat2 with out of out_dtype,
// which is the operands' dtype or, for float16/bfloat16 operands, float32
// (ATen's _mm_dtype_out_cuda: the float32 accumulator is stored without
// rounding to the operands' precision). cuBLASLt writes the wider D directly.
#include <string>

#include "shims/common/shim_util.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/matmul.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

std::string matrix_shape(const TensorRef& t) {
  return std::to_string(t.sizes[0]) + "x" + std::to_string(t.sizes[1]);
}

// ATen's checks, in its order and with its messages.
Error check_mm_dtype(const TensorRef& o, const TensorRef& a, const TensorRef& b, int32_t out_dtype) {
  if (a.dim() != 2)
    return aoti::invalid("self must be a matrix, got " + std::to_string(a.dim()) + "-D tensor");
  if (b.dim() != 2)
    return aoti::invalid("mat2 must be a matrix, got " + std::to_string(b.dim()) + "-D tensor");
  if (a.sizes[1] != b.sizes[0])
    return aoti::invalid("mat1 and mat2 shapes cannot be multiplied (" + matrix_shape(a) + " and " +
                         matrix_shape(b) + ")");
  if (out_dtype != static_cast<int32_t>(o.dtype))
    return aoti::invalid(
        "out_dtype must be the same as the dtype of the provided out tensor (out_dtype code " +
        std::to_string(out_dtype) + ", out " + dtype_name(o.dtype) + ")");
  if (a.dtype != b.dtype)
    return aoti::invalid(std::string("input dtypes must be the same (self ") + dtype_name(a.dtype) +
                         ", mat2 " + dtype_name(b.dtype) + ")");
  const bool widened = o.dtype == DType::Float32 && (a.dtype == DType::Float16 || a.dtype == DType::BFloat16);
  if (o.dtype != a.dtype && !widened)
    return aoti::invalid(
        std::string("out_dtype must be the same as input dtype or fp32 for fp16/bf16 inputs (inputs ") +
        dtype_name(a.dtype) + ", out_dtype " + dtype_name(o.dtype) + ")");
  // ATen multiplies into out itself, which is never resized here.
  if (o.dim() != 2 || o.sizes[0] != a.sizes[0] || o.sizes[1] != b.sizes[1])
    return aoti::invalid("out " + o.describe() + " is not the " + std::to_string(a.sizes[0]) + "x" +
                         std::to_string(b.sizes[1]) + " result of self " + a.describe() + " @ mat2 " +
                         b.describe());
  if (a.device_index != o.device_index || b.device_index != o.device_index)
    return aoti::invalid("self, mat2 and out are on different CUDA devices (" +
                         std::to_string(a.device_index) + ", " + std::to_string(b.device_index) + ", " +
                         std::to_string(o.device_index) + ")");
  return check_product_dtype(a.dtype);
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_mm_dtype_out(AtenTensorHandle out, AtenTensorHandle self,
                                                             AtenTensorHandle mat2, int32_t out_dtype) {
  return aoti::guarded("aoti_torch_cuda_mm_dtype_out", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out, "out"));
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_tensor(self, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef b, read_tensor(mat2, "mat2"));
    KILN_RETURN_IF_ERROR(check_mm_dtype(o, a, b, out_dtype));
    return matmul_into(o, a, b, 1.0, 0.0);
  });
}

}  // extern "C"
