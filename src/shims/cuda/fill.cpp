// aoti_torch_cuda_fill__Scalar: sets every element of `self` (any strides) to
// `value` converted to self's dtype (a complex self gets value + 0i). As
// ATen's Scalar conversion, a value outside the dtype's range (or NaN for an
// integer dtype) is refused rather than wrapped; a fraction going to an
// integer truncates toward zero. Writes in place on the current stream.
#include <string>

#include "shims/common/scalar_range.h"
#include "shims/cuda/cuda_shims.h"
#include "shims/cuda/elementwise.h"

using namespace kiln;
using namespace kiln::cudadev;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_fill__Scalar(AtenTensorHandle self, double value) {
  return aoti::guarded("aoti_torch_cuda_fill__Scalar", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(TensorRef t, read_tensor(self, "self"));
    KILN_RETURN_IF_ERROR(check_elementwise_dtype(t, "self", "fill_"));
    if (!aoti::scalar_fits(value, t.dtype))
      return aoti::invalid("argument 'value' (" + std::to_string(value) + ") cannot be converted to " +
                           dtype_name(t.dtype) + " without overflow");
    // Integers take the value truncated toward zero through int64; bool takes value != 0.
    const ComputeClass compute = t.dtype == DType::Bool ? ComputeClass::Floating : compute_class(t.dtype);
    return run_elementwise(ElementwiseOp::Fill, compute, scalar_operand(value), scalar_operand(0.0), t);
  });
}

}  // extern "C"
