// aoti_torch_cuda_abs: |self|; a complex tensor gives its magnitude in the
// real dtype of the same precision (complex64 -> float32), the case Inductor
// leaves to this fallback (an audio front end's spectrogram after the FFT).
// Integers wrap as ATen's (the most negative value stays itself); unsigned
// values are their own magnitude; bool is refused, as ATen.
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/elementwise.h"

using namespace kiln;
using namespace kiln::cudadev;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_abs(AtenTensorHandle self, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cuda_abs", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef a, read_tensor(self, "self"));
    KILN_RETURN_IF_ERROR(check_elementwise_dtype(a, "self", "abs"));
    if (a.dtype == DType::Bool) return aoti::invalid("abs is not implemented for bool (as ATen)");
    const DType out_dtype = a.dtype == DType::Complex64    ? DType::Float32
                            : a.dtype == DType::Complex128 ? DType::Float64
                                                           : a.dtype;
    return unary_elementwise(ElementwiseOp::Abs, compute_class(a.dtype), a, scalar_operand(0.0), out_dtype, ret0);
  });
}

}  // extern "C"
