// aoti_torch_cpu_angle: the argument of each element. Complex values give
// atan2(imag, real) in the real dtype of the same precision; real values give
// pi for negatives and 0 otherwise (NaN stays NaN); integer and bool tensors
// give float32, as ATen. As ATen's, a complex input gives a contiguous result
// (its kernel computes into a complex buffer and copies the real part out);
// a real one follows the input's layout.
#include <cmath>

#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/elementwise.h"

using namespace kiln;
using namespace kiln::cpu;

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_angle(AtenTensorHandle self, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_angle", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * a, cpu_tensor_arg(self, "self"));
    const DType dt = a->dtype();
    if (element_kind(dt) == ElementKind::Unsupported)
      return aoti::invalid(std::string("argument 'self' has dtype ") + dtype_name(dt) +
                           ", which angle does not take");
    const DType out_dtype = is_integral(dt)           ? DType::Float32
                            : dt == DType::Complex64  ? DType::Float32
                            : dt == DType::Complex128 ? DType::Float64
                                                      : dt;
    const DType compute = is_integral(dt) ? DType::Float64 : dt;
    return unary_elementwise(
        *a, compute, out_dtype,
        [](auto tag, auto x) {
          using T = decltype(tag);
          if constexpr (std::is_same_v<T, Complex>) {
            return T(std::arg(x), 0.0);
          } else if constexpr (std::is_same_v<T, double>) {
            if (std::isnan(x)) return x;
            return x < 0 ? 3.14159265358979323846 : 0.0;
          } else {
            return x;  // not reached: integers compute as double
          }
        },
        ret0, is_complex(dt));
  });
}

}  // extern "C"
