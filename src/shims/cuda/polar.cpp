// aoti_torch_cuda_polar: abs * (cos(angle) + i sin(angle)), broadcast, from
// two float32 or two float64 tensors (complex64 / complex128 result, as a
// rotary embedding's frequencies in complex form), laid out as TensorIterator
// would.
#include <string>

#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/elementwise.h"

using namespace kiln;
using namespace kiln::cudadev;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_polar(AtenTensorHandle abs, AtenTensorHandle angle,
                                                      AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_polar", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef r, read_tensor(abs, "abs"));
    KILN_ASSIGN_OR_RETURN(TensorRef theta, read_tensor(angle, "angle"));
    if (r.dtype != DType::Float32 && r.dtype != DType::Float64)
      return aoti::invalid(std::string("argument 'abs' has dtype ") + dtype_name(r.dtype) +
                           ", expected float32 or float64");
    if (theta.dtype != r.dtype)
      return aoti::invalid(std::string("argument 'angle' has dtype ") + dtype_name(theta.dtype) + ", expected " +
                           dtype_name(r.dtype) + " (the dtype of 'abs')");
    const DType out_dtype = r.dtype == DType::Float32 ? DType::Complex64 : DType::Complex128;
    return binary_elementwise(ElementwiseOp::Polar, ComputeClass::Floating, r, theta, "abs", "angle", out_dtype,
                              ret0);
  });
}

}  // extern "C"
