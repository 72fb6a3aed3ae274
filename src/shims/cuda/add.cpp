// aoti_torch_cuda_add_Tensor, aoti_torch_cuda_add_Scalar: self + alpha * other
// with ATen's type promotion and broadcasting (complex included: Inductor
// leaves complex arithmetic to this fallback). Scalars cross the C ABI as
// doubles, so a double `other` with an integral tensor gives float32, and any
// alpha is refused for an integral or bool result, as libtorch's own shim.
#include <string>

#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/elementwise.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

Error check_alpha(DType result) {
  if (is_integral_class(result))
    return aoti::invalid(
        std::string("For integral input tensors, argument alpha must not be a floating point number "
                    "(alpha crosses the C ABI as a double; the result dtype is ") +
        dtype_name(result) + ")");
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_add_Tensor(AtenTensorHandle self, AtenTensorHandle other,
                                                           double alpha, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_add_Tensor", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_operand(self, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef b, read_operand(other, "other"));
    KILN_RETURN_IF_ERROR(check_elementwise_dtype(a, "self", "add"));
    KILN_RETURN_IF_ERROR(check_elementwise_dtype(b, "other", "add"));
    ResultType rt;
    rt.add_tensor(a.dtype, a.dim());
    rt.add_tensor(b.dtype, b.dim());
    KILN_ASSIGN_OR_RETURN(DType dt, rt.dtype());
    KILN_RETURN_IF_ERROR(check_alpha(dt));
    return binary_elementwise(ElementwiseOp::Add, compute_class(dt), a, b, "self", "other", dt, ret0, alpha);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_add_Scalar(AtenTensorHandle self, double other, double alpha,
                                                           AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_add_Scalar", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_tensor(self, "self"));
    KILN_RETURN_IF_ERROR(check_elementwise_dtype(a, "self", "add"));
    ResultType rt;
    rt.add_tensor(a.dtype, a.dim());
    rt.add_double_scalar();
    KILN_ASSIGN_OR_RETURN(DType dt, rt.dtype());
    KILN_RETURN_IF_ERROR(check_alpha(dt));
    return unary_elementwise(ElementwiseOp::Add, compute_class(dt), a, scalar_operand(other), dt, ret0, alpha);
  });
}

}  // extern "C"
