// aoti_torch_cpu_add_Tensor, aoti_torch_cpu_add_Scalar: self + alpha * other
// with ATen's type promotion and broadcasting. Scalars cross the C ABI as
// doubles, so ATen sees `other` and `alpha` as floating Scalars: a double
// `other` with an integral tensor gives float32, and any alpha is refused for
// an integral or bool result ("alpha must not be a floating point number"),
// exactly as libtorch's own shim behaves.
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/elementwise.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

Error check_alpha(DType result) {
  if (is_integral(result))
    return aoti::invalid(
        std::string("For integral input tensors, argument alpha must not be a floating point number "
                    "(alpha crosses the C ABI as a double; the result dtype is ") +
        dtype_name(result) + ")");
  return Error::Ok;
}

template <typename T>
T add_scaled(T a, T b, double alpha) {
  if constexpr (std::is_same_v<T, int64_t>) {
    return wrap_add(a, wrap_mul(b, static_cast<int64_t>(alpha)));
  } else {
    return alpha == 1.0 ? a + b : a + T(alpha) * b;
  }
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_add_Tensor(AtenTensorHandle self, AtenTensorHandle other,
                                                          double alpha, AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_add_Tensor", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * a, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * b, cpu_tensor_arg(other, "other"));
    ResultType rt;
    rt.add_tensor(*a);
    rt.add_tensor(*b);
    KILN_ASSIGN_OR_RETURN(DType dt, rt.dtype());
    KILN_RETURN_IF_ERROR(check_alpha(dt));
    return binary_elementwise(
        *a, *b, "self", "other", dt, dt, [&](auto, auto x, auto y) { return add_scaled(x, y, alpha); }, ret0);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_add_Scalar(AtenTensorHandle self, double other, double alpha,
                                                          AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_add_Scalar", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * a, cpu_tensor_arg(self, "self"));
    ResultType rt;
    rt.add_tensor(*a);
    rt.add_double_scalar();
    KILN_ASSIGN_OR_RETURN(DType dt, rt.dtype());
    KILN_RETURN_IF_ERROR(check_alpha(dt));
    return unary_elementwise(
        *a, dt, dt,
        [&](auto tag, auto x) {
          using T = decltype(tag);
          return add_scaled(x, T(other), alpha);
        },
        ret0);
  });
}

}  // extern "C"
