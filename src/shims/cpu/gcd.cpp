// aoti_torch_cpu_gcd: the non-negative greatest common divisor of integer
// tensors, broadcast, in the promoted integer dtype (gcd(0, 0) = 0). Bool
// and floating inputs are refused, as ATen.
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
        [](auto tag, auto x, auto y) {
          if constexpr (!std::is_same_v<decltype(tag), int64_t>) {
            return x;  // not reached: computed in int64
          } else {
            // Magnitudes in uint64 so that the most negative int64 has one.
            uint64_t p = x < 0 ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
            uint64_t q = y < 0 ? 0 - static_cast<uint64_t>(y) : static_cast<uint64_t>(y);
            while (p != 0) {
              const uint64_t t = q % p;
              q = p;
              p = t;
            }
            return static_cast<int64_t>(q);
          }
        },
        ret0);
  });
}

}  // extern "C"
