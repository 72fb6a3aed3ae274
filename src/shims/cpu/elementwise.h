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

/// torch.result_type over tensors and double scalars (a Scalar crosses the C
/// ABI as a double, so it is always a floating wrapped number).
class ResultType {
 public:
  void add_tensor(const Tensor& t) {
    auto& slot = t.dim() > 0 ? dim_ : zero_dim_;
    slot = slot ? promote_types(*slot, t.dtype()) : t.dtype();
  }
  /// A wrapped double counts as the default dtype (float32).
  void add_double_scalar() {
    wrapped_ = wrapped_ ? promote_types(*wrapped_, DType::Float32) : DType::Float32;
  }

  /// The result dtype, or an error when it would be a dtype Kiln lacks
  /// (complex32, from a float16 tensor with a 0-d complex one).
  Result<DType> dtype() const {
    std::optional<DType> lower = combine(zero_dim_, wrapped_);
    if (!lower && !dim_) return aoti::invalid("no operand to take a result dtype from");
    if (dim_ && lower && !is_complex(*dim_) && is_complex(*lower) && is_floating(*dim_)) {
      // ATen maps bfloat16 to complex64 here (there is no complex bfloat16).
      if (*dim_ == DType::Float32 || *dim_ == DType::BFloat16) return DType::Complex64;
      if (*dim_ == DType::Float64) return DType::Complex128;
      return aoti::invalid(std::string("the result dtype would be the complex type of ") + dtype_name(*dim_) +
                           ", which Kiln does not support");
    }
    return *combine(dim_, lower);
  }

 private:
  // ATen's combine_categories: the higher class wins unless the lower one is
  // of a higher kind (bool < integral < floating < complex).
  static std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
    if (!higher) return lower;
    if (!lower) return higher;
    if (is_complex(*higher)) return higher;
    if (is_complex(*lower)) {
      if (is_floating(*higher)) {
        if (*higher == DType::Float64) return DType::Complex128;
        if (*higher == DType::Float32 || *higher == DType::BFloat16) return DType::Complex64;
        return lower;  // float16: complex32 is refused in dtype()
      }
      return lower;
    }
    if (is_floating(*higher)) return higher;
    if (*higher == DType::Bool || is_floating(*lower)) return promote_types(*higher, *lower);
    return higher;
  }

  std::optional<DType> dim_, zero_dim_, wrapped_;
};

/// The broadcast of two shapes (aligned at the last dimension), or an error
/// naming both arguments.
inline Result<std::vector<int64_t>> broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b,
                                                     const char* name_a, const char* name_b) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      return aoti::invalid(std::string("the shapes of '") + name_a + "' " + aoti::shape_string(a) + " and '" +
                           name_b + "' " + aoti::shape_string(b) + " do not broadcast (dimension " +
                           std::to_string(i) + ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// Strides TensorIterator gives a new result of `shape` computed from
/// `inputs` (each already broadcast to `shape`): dimensions sorted by the
/// inputs' strides (innermost first; a stride-0 dimension gives no opinion,
/// equal strides put the smaller size inside), then packed densely.
inline std::vector<int64_t> elementwise_strides(std::span<const int64_t> shape,
                                                const std::vector<Tensor>& inputs) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  std::vector<int64_t> perm(static_cast<size_t>(nd));  // perm[0] is the innermost dimension
  for (int64_t i = 0; i < nd; ++i) perm[static_cast<size_t>(i)] = nd - 1 - i;
  auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const Tensor& t : inputs) {
      const int64_t s0 = t.stride(d0), s1 = t.stride(d1);
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (shape[static_cast<size_t>(d0)] > shape[static_cast<size_t>(d1)]) return 1;
    }
    return 0;
  };
  for (int64_t i = 1; i < nd; ++i) {
    int64_t d1 = i;
    for (int64_t d0 = i - 1; d0 >= 0; --d0) {
      const int c = should_swap(perm[static_cast<size_t>(d0)], perm[static_cast<size_t>(d1)]);
      if (c > 0) {
        std::swap(perm[static_cast<size_t>(d0)], perm[static_cast<size_t>(d1)]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  std::vector<int64_t> strides(static_cast<size_t>(nd));
  int64_t s = 1;
  for (int64_t d : perm) {
    strides[static_cast<size_t>(d)] = s;
    s *= std::max<int64_t>(shape[static_cast<size_t>(d)], 1);
  }
  return strides;
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
