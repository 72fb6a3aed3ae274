// Shared helpers of the CPU pooling ops (avg/max/adaptive/fractional pooling
// and max unpooling over 2 or 3 spatial dims): the geometry every device
// shares (shims/common/pool_args.h) taken from a Tensor, and the channels-last
// output layout ATen's CPU kernels give a channels-last input. Every op works on
// "planes" (one (n, c) image each) held row-major in a contiguous buffer; a
// 2-d op is the 3-d case with a depth of 1.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "devices/cpu/element_buffer.h"
#include "devices/cpu/float_io.h"
#include "shims/common/pool_args.h"
#include "shims/cpu/op_args.h"

namespace kiln::cpu::pool {

using aoti::pool::adaptive_end;
using aoti::pool::adaptive_start;
using aoti::pool::Dims;
using aoti::pool::dims_arg;
using aoti::pool::exact_dims_arg;
using aoti::pool::Planes;
using aoti::pool::pooled_size;
using aoti::pool::positive;
using aoti::pool::result_sizes;
using aoti::pool::window_output;

/// Checks `self` is (N, C, spatial...) or (C, spatial...) with `spatial` dims
/// and every non-batch dimension non-empty (ATen allows only N == 0).
inline Result<Planes> planes_of(const Tensor& self, int spatial, const char* name = "self") {
  return aoti::pool::planes_of(self.sizes(), spatial, name, self.describe());
}

/// Whether `t` (4-d or 5-d) has channels-last strides as ATen's
/// suggest_memory_format sees them: dims ordered C, spatial (last first), N
/// by increasing stride, with no two non-trivially equal.
inline bool channels_last_strides(const Tensor& t) {
  const int64_t rank = t.dim();
  if (rank != 4 && rank != 5) return false;
  if (t.stride(1) == 0) return false;
  std::vector<int64_t> order{1};
  for (int64_t d = rank - 1; d >= 2; --d) order.push_back(d);
  order.push_back(0);
  int64_t min = 0;
  for (int64_t d : order) {
    if (t.size(d) == 0) return false;
    if (t.stride(d) < min) return false;
    if (d == 0 && min == t.stride(1)) return false;
    min = t.stride(d);
    if (t.size(d) > 1) min *= t.size(d);
  }
  return true;
}

/// A new tensor of `sizes`, contiguous or channels-last.
inline Result<Tensor> new_output(std::span<const int64_t> sizes, DType dtype, bool channels_last) {
  if (!channels_last) return new_cpu_tensor(sizes, dtype);
  const size_t rank = sizes.size();
  std::vector<int64_t> strides(rank);
  int64_t s = 1;
  strides[1] = 1;
  s *= sizes[1];
  for (size_t d = rank - 1; d >= 2; --d) {
    strides[d] = s;
    s *= sizes[d];
  }
  strides[0] = s;
  return Tensor::empty_strided(sizes, strides, dtype, Device{DeviceType::CPU, 0});
}

/// Error unless `dtype` is one the pooling ops compute on: floating, and
/// integers where `allow_integers`.
inline Error pool_dtype(DType dtype, bool allow_integers, const char* name = "self") {
  if (is_floating(dtype) || (allow_integers && is_integral(dtype) && dtype != DType::Bool)) return Error::Ok;
  return set_error(Error::NotSupported, std::string("argument '") + name + "' has dtype " + dtype_name(dtype) +
                                            ", which this op does not support");
}

template <typename T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

template <typename T>
inline T lowest() {
  if constexpr (std::is_floating_point_v<T>)
    return -std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::lowest();
}

/// Calls fn(x) with x pointing at `self`'s elements row-major: float32 as
/// float (borrowed when contiguous, so the common CNN case copies nothing),
/// other dtypes as their element_buffer compute type (int64_t or double).
/// Complex is NotSupported (callers refuse it first).
template <typename Fn>
Error visit_input(const Tensor& self, Fn&& fn) {
  if (self.dtype() == DType::Float32) {
    std::vector<float> scratch;
    return fn(contiguous_floats(self, scratch));
  }
  return visit_kind(self.dtype(), [&](auto tag) -> Error {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, Complex>) {
      return set_error(Error::NotSupported, "complex input is not supported");
    } else {
      const std::vector<T> v = read_elements<T>(self);
      return fn(static_cast<const T*>(v.data()));
    }
  });
}

/// Writes row-major `values` into `dst` (any strides), converting to its dtype.
inline void write_values(const float* values, const Tensor& dst) { store_floats(values, dst); }
template <typename T>
void write_values(const T* values, const Tensor& dst) {
  write_elements(values, dst);
}

}  // namespace kiln::cpu::pool
