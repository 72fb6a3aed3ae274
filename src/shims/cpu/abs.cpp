// aoti_torch_cpu_abs: |self|; a complex tensor gives its magnitude in the
// real dtype of the same precision (complex64 -> float32). Integers wrap as
// ATen's (the most negative value stays itself); unsigned values are their
// own magnitude; bool is refused, as ATen.
#include <cmath>

#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/elementwise.h"

using namespace kiln;
using namespace kiln::cpu;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_abs(AtenTensorHandle self, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_abs", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * a, cpu_tensor_arg(self, "self"));
    const DType dt = a->dtype();
    if (dt == DType::Bool) return aoti::invalid("abs is not implemented for bool (as ATen)");
    const bool is_unsigned =
        dt == DType::UInt8 || dt == DType::UInt16 || dt == DType::UInt32 || dt == DType::UInt64;
    const DType out_dtype = dt == DType::Complex64    ? DType::Float32
                            : dt == DType::Complex128 ? DType::Float64
                                                      : dt;
    return unary_elementwise(
        *a, dt, out_dtype,
        [&](auto tag, auto x) {
          using T = decltype(tag);
          if constexpr (std::is_same_v<T, int64_t>) {
            return is_unsigned || x >= 0 ? x : static_cast<int64_t>(0 - static_cast<uint64_t>(x));
          } else if constexpr (std::is_same_v<T, double>) {
            return std::fabs(x);
          } else {
            return T(std::abs(x), 0.0);
          }
        },
        ret0);
  });
}

}  // extern "C"
