// aoti_torch_cpu_gcd: the greatest common divisor of integer tensors,
// broadcast, in the promoted integer dtype, computed in that dtype as ATen
// does (shims/common/gcd_value.h: gcd(0, 0) = 0, the most negative value
// keeps ATen's wrapped answer). Bool and floating inputs are refused, as
// ATen.
#include "shims/common/gcd_value.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/elementwise.h"

using namespace kiln;
using namespace kiln::cpu;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_gcd(AtenTensorHandle self, AtenTensorHandle other,
                                                   AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_gcd", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * a, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * b, cpu_tensor_arg(other, "other"));
    ResultType rt;
    rt.add_tensor(*a);
    rt.add_tensor(*b);
    KILN_ASSIGN_OR_RETURN(DType dt, rt.dtype());
    if (!is_integral(dt) || dt == DType::Bool)
      return aoti::invalid(std::string("gcd needs integer tensors; the promoted dtype is ") + dtype_name(dt));
    return binary_elementwise(
        *a, *b, "self", "other", DType::Int64, dt,
        [dt](auto tag, auto x, auto y) {
          if constexpr (!std::is_same_v<decltype(tag), int64_t>) {
            return x;  // not reached: computed in int64
          } else {
            switch (dt) {
              case DType::UInt8: return static_cast<int64_t>(aoti::gcd_value(static_cast<uint8_t>(x), static_cast<uint8_t>(y)));
              case DType::Int8: return static_cast<int64_t>(aoti::gcd_value(static_cast<int8_t>(x), static_cast<int8_t>(y)));
              case DType::Int16: return static_cast<int64_t>(aoti::gcd_value(static_cast<int16_t>(x), static_cast<int16_t>(y)));
              case DType::Int32: return static_cast<int64_t>(aoti::gcd_value(static_cast<int32_t>(x), static_cast<int32_t>(y)));
              default: return aoti::gcd_value(static_cast<int64_t>(x), static_cast<int64_t>(y));
            }
          }
        },
        ret0);
  });
}

}  // extern "C"
