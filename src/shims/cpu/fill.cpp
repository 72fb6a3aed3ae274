// aoti_torch_cpu_fill__Scalar: sets every element of `self` (any strides) to
// `value` converted to self's dtype. As ATen's Scalar conversion, a value
// outside the dtype's range (or NaN for an integer dtype) is refused rather
// than wrapped; a fraction going to an integer truncates toward zero.
#include <cmath>
#include <cstring>
#include <limits>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/strided_index.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/op_args.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

// The finite range of each dtype a double must fall in (infinities pass for
// floating dtypes, NaN too; integer dtypes take neither).
bool fits(double v, DType dt) {
  auto in = [&](double lo, double hi) { return !(v < lo || v > hi); };
  switch (dt) {
    case DType::Bool:
      return true;
    case DType::UInt8:
      return !std::isnan(v) && in(0, 255);
    case DType::Int8:
      return !std::isnan(v) && in(-128, 127);
    case DType::Int16:
      return !std::isnan(v) && in(-32768, 32767);
    case DType::UInt16:
      return !std::isnan(v) && in(0, 65535);
    case DType::Int32:
      return !std::isnan(v) && in(-2147483648.0, 2147483647.0);
    case DType::UInt32:
      return !std::isnan(v) && in(0, 4294967295.0);
    case DType::Int64:
      return !std::isnan(v) && in(-9223372036854775808.0, 9223372036854775807.0);
    case DType::UInt64:
      return !std::isnan(v) && in(0, 18446744073709551615.0);
    case DType::Float16:
      return std::isinf(v) || in(-65504.0, 65504.0);
    case DType::BFloat16:
      return std::isinf(v) || in(-3.3895313892515355e38, 3.3895313892515355e38);
    case DType::Float32:
    case DType::Complex64:
      return std::isinf(v) || in(-std::numeric_limits<float>::max(), std::numeric_limits<float>::max());
    default:
      return true;
  }
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_fill__Scalar(AtenTensorHandle self, double value) {
  return aoti::guarded("aoti_torch_cpu_fill__Scalar", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * t, cpu_tensor_arg(self, "self"));
    if (element_kind(t->dtype()) == ElementKind::Unsupported)
      return aoti::invalid(std::string("argument 'self' has dtype ") + dtype_name(t->dtype()) +
                           ", which fill_ does not take");
    if (!fits(value, t->dtype()))
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
