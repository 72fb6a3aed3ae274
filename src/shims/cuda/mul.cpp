// aoti_torch_cuda_mul_Tensor, aoti_torch_cuda_mul_Scalar: self * other with
// ATen's type promotion and broadcasting (complex included: Inductor leaves
// complex arithmetic, e.g. a rotary embedding in complex form, to this
// fallback). bool * bool stays bool; integers wrap; a double Scalar with an
// integral tensor gives float32, the Scalar being a double in the C ABI.
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/elementwise.h"

using namespace kiln;
using namespace kiln::cudadev;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_mul_Tensor(AtenTensorHandle self, AtenTensorHandle other,
                                                           AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_mul_Tensor", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_operand(self, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef b, read_operand(other, "other"));
    KILN_RETURN_IF_ERROR(check_elementwise_dtype(a, "self", "mul"));
    KILN_RETURN_IF_ERROR(check_elementwise_dtype(b, "other", "mul"));
    ResultType rt;
    rt.add_tensor(a.dtype, a.dim());
    rt.add_tensor(b.dtype, b.dim());
    KILN_ASSIGN_OR_RETURN(DType dt, rt.dtype());
    return binary_elementwise(ElementwiseOp::Mul, compute_class(dt), a, b, "self", "other", dt, ret0);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_mul_Scalar(AtenTensorHandle self, double other,
                                                           AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_mul_Scalar", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_tensor(self, "self"));
    KILN_RETURN_IF_ERROR(check_elementwise_dtype(a, "self", "mul"));
    ResultType rt;
    rt.add_tensor(a.dtype, a.dim());
    rt.add_double_scalar();
    KILN_ASSIGN_OR_RETURN(DType dt, rt.dtype());
    return unary_elementwise(ElementwiseOp::Mul, compute_class(dt), a, scalar_operand(other), dt, ret0);
  });
}

}  // extern "C"
