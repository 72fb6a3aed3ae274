// aoti_torch_cuda_pow_Tensor_Tensor, _Tensor_Scalar, _Scalar: self ** exponent
// with ATen's promotion (a Scalar is a double in the C ABI, so an integral
// tensor with a Scalar gives float32). Integers raise by squaring with
// wrap-around, a negative integer exponent giving 0 except for bases 1 and -1,
// as ATen's integer pow; floating values use pow in double, complex ones
// exp(exponent * log(self)) in complex<double>. pow_Scalar's result is
// contiguous whatever the exponent's layout, as ATen's.
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/elementwise.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

Error check_result(DType dt) {
  if (dt == DType::Bool) return aoti::invalid("pow is not implemented for bool (as ATen)");
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_pow_Tensor_Tensor(AtenTensorHandle self, AtenTensorHandle exponent,
                                                                  AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_pow_Tensor_Tensor", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_operand(self, "self"));
    KILN_ASSIGN_OR_RETURN(TensorRef b, read_operand(exponent, "exponent"));
    KILN_RETURN_IF_ERROR(check_elementwise_dtype(a, "self", "pow"));
    KILN_RETURN_IF_ERROR(check_elementwise_dtype(b, "exponent", "pow"));
    ResultType rt;
    rt.add_tensor(a.dtype, a.dim());
    rt.add_tensor(b.dtype, b.dim());
    KILN_ASSIGN_OR_RETURN(DType dt, rt.dtype());
    KILN_RETURN_IF_ERROR(check_result(dt));
    return binary_elementwise(ElementwiseOp::Pow, compute_class(dt), a, b, "self", "exponent", dt, ret0);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_pow_Tensor_Scalar(AtenTensorHandle self, double exponent,
                                                                  AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_pow_Tensor_Scalar", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_tensor(self, "self"));
    KILN_RETURN_IF_ERROR(check_elementwise_dtype(a, "self", "pow"));
    ResultType rt;
    rt.add_tensor(a.dtype, a.dim());
    rt.add_double_scalar();
    KILN_ASSIGN_OR_RETURN(DType dt, rt.dtype());
    KILN_RETURN_IF_ERROR(check_result(dt));
    return unary_elementwise(ElementwiseOp::Pow, compute_class(dt), a, scalar_operand(exponent), dt, ret0);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_pow_Scalar(double self, AtenTensorHandle exponent,
                                                           AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_pow_Scalar", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef b, read_tensor(exponent, "exponent"));
    KILN_RETURN_IF_ERROR(check_elementwise_dtype(b, "exponent", "pow"));
    ResultType rt;
    rt.add_double_scalar();
    rt.add_tensor(b.dtype, b.dim());
    KILN_ASSIGN_OR_RETURN(DType dt, rt.dtype());
    KILN_RETURN_IF_ERROR(check_result(dt));
    // The base is the constant: the kernel's first operand, the exponent tensor the second.
    std::vector<int64_t> strides;
    KILN_ASSIGN_OR_RETURN(ElementwiseOperand e, tensor_operand(b, b.sizes, strides));
    KILN_ASSIGN_OR_RETURN(OwnedHandle out, new_contiguous(b.sizes, dt, b.device_index));
    KILN_ASSIGN_OR_RETURN(TensorRef o, read_tensor(out.get(), "ret0"));
    KILN_RETURN_IF_ERROR(run_elementwise(ElementwiseOp::Pow, compute_class(dt), scalar_operand(self), e, o));
    return return_handle(out, ret0, "ret0");
  });
}

}  // extern "C"
