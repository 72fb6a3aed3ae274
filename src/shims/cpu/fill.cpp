// aoti_torch_cpu_fill__Scalar: sets every element of `self` (any strides) to
// `value` converted to self's dtype. As ATen's Scalar conversion, a value
// outside the dtype's range (or NaN for an integer dtype) is refused rather
// than wrapped; a fraction going to an integer truncates toward zero.
#include <cstring>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/strided_index.h"
#include "shims/common/scalar_range.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_fill__Scalar(AtenTensorHandle self, double value) {
  return aoti::guarded("aoti_torch_cpu_fill__Scalar", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * t, cpu_tensor_arg(self, "self"));
    if (element_kind(t->dtype()) == ElementKind::Unsupported)
      return aoti::invalid(std::string("argument 'self' has dtype ") + dtype_name(t->dtype()) +
                           ", which fill_ does not take");
    if (!aoti::scalar_fits(value, t->dtype()))
      return aoti::invalid("argument 'value' (" + std::to_string(value) + ") cannot be converted to " +
                           dtype_name(t->dtype()) + " without overflow");
    char element[16];
    write_element<double>(element, t->dtype(), value);
    const size_t size = element_size(t->dtype());
    char* base = static_cast<char*>(t->data_ptr());
    for_each_offset(t->sizes(), t->strides(), [&](int64_t, int64_t off) {
      std::memcpy(base + off * static_cast<int64_t>(size), element, size);
    });
    return Error::Ok;
  });
}

}  // extern "C"
