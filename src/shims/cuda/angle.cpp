// aoti_torch_cuda_angle: the argument of each element. Complex values give
// atan2(imag, real) in the real dtype of the same precision; real values give
// pi for negatives and 0 otherwise (NaN stays NaN); integer and bool tensors
// give float32, as ATen. As ATen's, a complex input gives a contiguous result
// (its kernel computes into a complex buffer and copies the real part out); a
// real one follows the input's layout.
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/elementwise.h"

using namespace kiln;
using namespace kiln::cudadev;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_angle(AtenTensorHandle self, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_angle", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_tensor(self, "self"));
    KILN_RETURN_IF_ERROR(check_elementwise_dtype(a, "self", "angle"));
    const bool complex = is_complex_class(a.dtype);
    const DType out_dtype = is_integral_class(a.dtype)  ? DType::Float32
                            : a.dtype == DType::Complex64  ? DType::Float32
                            : a.dtype == DType::Complex128 ? DType::Float64
                                                           : a.dtype;
    const ComputeClass compute = complex ? ComputeClass::Complex : ComputeClass::Floating;
    return unary_elementwise(ElementwiseOp::Angle, compute, a, scalar_operand(0.0), out_dtype, ret0, 1.0,
                             /*contiguous=*/complex);
  });
}

}  // extern "C"
