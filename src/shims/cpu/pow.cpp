// aoti_torch_cpu_pow_Tensor_Tensor, _Tensor_Scalar, _Scalar: self ** exponent
// with ATen's promotion (a Scalar is a double in the C ABI, so an integral
// tensor with a Scalar gives float32). Integers raise by squaring with
// wrap-around, and a negative integer exponent gives 0 except for bases 1 and
// -1, as ATen's integer pow; floating and complex values use std::pow in
// double or complex<double>. pow_Scalar's result is contiguous whatever the
// exponent's layout, as ATen's.
#include <cmath>

#include "core/integer_pow.h"
#include "shims/cpu/cpu_shims.h"
#include "shims/cpu/elementwise.h"

using namespace kiln;
using namespace kiln::cpu;

namespace {

template <typename T>
T power(T base, T exp) {
  if constexpr (std::is_same_v<T, int64_t>)
    return integer_pow(base, exp);
  else
    return std::pow(base, exp);
}

Error check_result(DType dt) {
  if (dt == DType::Bool) return aoti::invalid("pow is not implemented for bool (as ATen)");
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_pow_Tensor_Tensor(AtenTensorHandle self,
                                                                 AtenTensorHandle exponent,
                                                                 AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_pow_Tensor_Tensor", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * a, cpu_tensor_arg(self, "self"));
    KILN_ASSIGN_OR_RETURN(Tensor * b, cpu_tensor_arg(exponent, "exponent"));
    ResultType rt;
    rt.add_tensor(*a);
    rt.add_tensor(*b);
    KILN_ASSIGN_OR_RETURN(DType dt, rt.dtype());
    KILN_RETURN_IF_ERROR(check_result(dt));
    return binary_elementwise(
        *a, *b, "self", "exponent", dt, dt, [](auto, auto x, auto y) { return power(x, y); }, ret0);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_pow_Tensor_Scalar(AtenTensorHandle self, double exponent,
                                                                 AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_pow_Tensor_Scalar", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * a, cpu_tensor_arg(self, "self"));
    ResultType rt;
    rt.add_tensor(*a);
    rt.add_double_scalar();
    KILN_ASSIGN_OR_RETURN(DType dt, rt.dtype());
    KILN_RETURN_IF_ERROR(check_result(dt));
    return unary_elementwise(
        *a, dt, dt,
        [&](auto tag, auto x) {
          using T = decltype(tag);
          return power(x, T(exponent));
        },
        ret0);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cpu_pow_Scalar(double self, AtenTensorHandle exponent,
                                                          AtenTensorHandle* ret0) {
  return aoti::guarded("aoti_torch_cpu_pow_Scalar", [&]() -> Error {
    KILN_ASSIGN_OR_RETURN(Tensor * b, cpu_tensor_arg(exponent, "exponent"));
    ResultType rt;
    rt.add_double_scalar();
    rt.add_tensor(*b);
    KILN_ASSIGN_OR_RETURN(DType dt, rt.dtype());
    KILN_RETURN_IF_ERROR(check_result(dt));
    return unary_elementwise(
        *b, dt, dt,
        [&](auto tag, auto y) {
          using T = decltype(tag);
          return power(T(self), y);
        },
        ret0, /*contiguous=*/true);
  });
}

}  // extern "C"
