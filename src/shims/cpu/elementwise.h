// What ATen's TensorIterator decides for an elementwise op, for the CPU
// fallbacks that compute over element_buffer.h: the result dtype
// (torch.result_type with its priority classes: tensors with dimensions, then
// 0-d tensors, then wrapped Python scalars), the broadcast shape, and the
// strides of a newly allocated result (it follows the inputs' memory order,
// so a transposed input gives a transposed result).
#pragma once

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "shims/cpu/op_args.h"

namespace kiln::cpu {

using ::kiln::ResultType;

using aoti::broadcast_shapes;

/// aoti::elementwise_strides for inputs already broadcast to `shape`.
inline std::vector<int64_t> elementwise_strides(std::span<const int64_t> shape,
                                                const std::vector<Tensor>& inputs) {
  std::vector<std::vector<int64_t>> strides;
  for (const Tensor& t : inputs) strides.emplace_back(t.strides().begin(), t.strides().end());
  return aoti::elementwise_strides(shape, strides);
}

/// A new result of `shape` and `dtype` laid out as TensorIterator would for
/// these (broadcast) inputs.
inline Result<Tensor> new_elementwise_result(std::span<const int64_t> shape, DType dtype,
                                             const std::vector<Tensor>& inputs) {
  const std::vector<int64_t> strides = elementwise_strides(shape, inputs);
  return Tensor::empty_strided(shape, strides, dtype, Device{DeviceType::CPU, 0});
}

}  // namespace kiln::cpu

namespace kiln::cpu {

/// out = fn(a, b) elementwise over the broadcast of `a` and `b`: both read as
/// the compute type of `compute` (int64_t, double or Complex), fn's results
/// written converting to `out_dtype`; the result is laid out as
/// TensorIterator would. fn is called as fn(T{}, a_i, b_i).
template <typename Fn>
Error binary_elementwise(const Tensor& a, const Tensor& b, const char* name_a, const char* name_b,
                         DType compute, DType out_dtype, Fn&& fn, AtenTensorHandle* ret0) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, broadcast_shapes(a.sizes(), b.sizes(), name_a, name_b));
  KILN_ASSIGN_OR_RETURN(Tensor av, broadcast_view(a, shape, name_a));
  KILN_ASSIGN_OR_RETURN(Tensor bv, broadcast_view(b, shape, name_b));
  KILN_ASSIGN_OR_RETURN(Tensor out, new_elementwise_result(shape, out_dtype, {av, bv}));
  KILN_RETURN_IF_ERROR(visit_kind(compute, [&](auto tag) -> Error {
    using T = decltype(tag);
    const std::vector<T> x = read_elements<T>(av);
    const std::vector<T> y = read_elements<T>(bv);
    std::vector<T> r(x.size());
    for (size_t i = 0; i < r.size(); ++i) r[i] = fn(tag, x[i], y[i]);
    write_elements(r.data(), out);
    return Error::Ok;
  }));
  return return_tensor(std::move(out), ret0, "ret0");
}

/// out = fn(T{}, a_i) elementwise, as binary_elementwise with one input; the
/// result follows a's layout unless `contiguous` (ops whose ATen kernel
/// allocates a contiguous result).
template <typename Fn>
Error unary_elementwise(const Tensor& a, DType compute, DType out_dtype, Fn&& fn, AtenTensorHandle* ret0,
                        bool contiguous = false) {
  KILN_ASSIGN_OR_RETURN(Tensor out, contiguous ? new_cpu_tensor(a.sizes(), out_dtype)
                                               : new_elementwise_result(a.sizes(), out_dtype, {a}));
  KILN_RETURN_IF_ERROR(visit_kind(compute, [&](auto tag) -> Error {
    using T = decltype(tag);
    std::vector<T> x = read_elements<T>(a);
    for (T& v : x) v = fn(tag, v);
    write_elements(x.data(), out);
    return Error::Ok;
  }));
  return return_tensor(std::move(out), ret0, "ret0");
}

}  // namespace kiln::cpu
