// aoti_torch_cpu_mul_Tensor, aoti_torch_cpu_mul_Scalar: self * other with
// ATen's type promotion and broadcasting (bool * bool stays bool; a double
// Scalar with an integral tensor gives float32, the Scalar being a double in
// the C ABI).
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/elementwise.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

template <typename T>
T times(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>)
    return wrap_mul(a, b);
  else
    return a * b;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_mul_Tensor(AtenTensorHandle self, AtenTensorHandle other,
                                                          AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_mul_Tensor", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * a, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * b, cpu_tensor_arg(other, "other"));
    ResultType rt;
    rt.add_tensor(*a);
    rt.add_tensor(*b);
    KILN_ASSIGN_OR_RETURN(DType dt, rt.dtype());
    return binary_elementwise(
        *a, *b, "self", "other", dt, dt, [](auto, auto x, auto y) { return times(x, y); }, ret0);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_mul_Scalar(AtenTensorHandle self, double other,
                                                          AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_mul_Scalar", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * a, cpu_tensor_arg(self, "self"));
    ResultType rt;
    rt.add_tensor(*a);
    rt.add_double_scalar();
    KILN_ASSIGN_OR_RETURN(DType dt, rt.dtype());
    return unary_elementwise(
        *a, dt, dt,
        [&](auto tag, auto x) {
          using T = decltype(tag);
          return times(x, T(other));
        },
        ret0);
  });
}

}  // extern "C"
