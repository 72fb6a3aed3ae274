// aoti_torch_cuda_gcd: the greatest common divisor of integer tensors,
// broadcast, in the promoted dtype, laid out as TensorIterator lays it out
// (shims/cuda/elementwise.h, kernels/elementwise_kernel.cu). As ATen's CUDA
// kernel: uint8, int8, int16, int32 and int64 (bool, floating and the wide
// unsigned dtypes are refused); gcd(0, 0) = 0; the most negative value of the
// dtype keeps ATen's wrapped answer. A 0-d CPU tensor may stand for one
// operand.
#include <string>

#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/elementwise.h"

using namespace kiln;
using namespace kiln::cudadev;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_gcd(AtenTensorHandle self, AtenTensorHandle other,
                                                    AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_gcd", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_operand(self, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef b, read_operand(other, "other"));
    KILN_RETURN_IF_ERROR(check_elementwise_dtype(a, "self", "gcd"));
    KILN_RETURN_IF_ERROR(check_elementwise_dtype(b, "other", "gcd"));
    ResultType rt;
    rt.add_tensor(a.dtype, a.dim());
    rt.add_tensor(b.dtype, b.dim());
    KILN_ASSIGN_OR_RETURN(DType dt, rt.dtype());
    if (dt != DType::UInt8 && dt != DType::Int8 && dt != DType::Int16 && dt != DType::Int32 && dt != DType::Int64)
      return aoti::invalid(std::string("gcd needs integer tensors (uint8, int8, int16, int32, int64 on CUDA); "
                                       "the promoted dtype is ") +
                           dtype_name(dt));
    return binary_elementwise(ElementwiseOp::Gcd, ComputeClass::Integer, a, b, "self", "other", dt, ret0);
  });
}

}  // extern "C"
