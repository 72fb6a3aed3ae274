// Shared geometry of the CPU pooling ops (avg/max/adaptive/fractional pooling
// and max unpooling over 2 or 3 spatial dims): input shape checks, ATen's
// output-size rule, per-dimension argument lists, and the channels-last output
// layout ATen's CPU kernels give a channels-last input. Every op works on
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
#include "shims/cpu/op_args.h"

namespace kiln::cpu::pool {

using Dims = std::array<int64_t, 3>;

/// A pooling input: `batch` x `channels` planes of in[0] x in[1] x in[2]
/// elements (in[0] == 1 for 2-d ops).
struct Planes {
  bool batched = false;
  int64_t batch = 1;
  int64_t channels = 1;
  Dims in{1, 1, 1};
  int64_t planes() const { return batch * channels; }
  int64_t plane_size() const { return in[0] * in[1] * in[2]; }
};

/// Checks `self` is (N, C, spatial...) or (C, spatial...) with `spatial` dims
/// and every non-batch dimension non-empty (ATen allows only N == 0).
inline Result<Planes> planes_of(const Tensor& self, int spatial, const char* name = "self") {
  const int64_t rank = self.dim();
  if (rank != spatial + 1 && rank != spatial + 2)
    return aoti::invalid(std::string("argument '") + name + "' must be " + std::to_string(spatial + 1) + "-d or " +
                         std::to_string(spatial + 2) + "-d (batched), got " + self.describe());
  Planes p;
  p.batched = rank == spatial + 2;
  const int64_t first = p.batched ? 1 : 0;
  for (int64_t d = first; d < rank; ++d)
    if (self.size(d) == 0)
      return aoti::invalid(std::string("argument '") + name + "' has an empty non-batch dimension: " + self.describe());
  p.batch = p.batched ? self.size(0) : 1;
  p.channels = self.size(first);
  for (int i = 0; i < spatial; ++i) p.in[3 - spatial + i] = self.size(first + 1 + i);
  return p;
}

/// A per-dimension list (1 value for all, or `spatial` values) placed in the
/// last `spatial` slots of a Dims whose leading slots hold `fill`. An empty
/// list gives `empty_default` when set, else is an error.
inline Result<Dims> dims_arg(const int64_t* ptr, int64_t len, int spatial, const char* name, int64_t fill,
                             const Dims* empty_default = nullptr) {
  KILN_ASSIGN_OR_RETURN(std::span<const int64_t> v, aoti::int_array_arg(ptr, len, name));
  if (v.empty() && empty_default) return *empty_default;
  if (v.size() != 1 && v.size() != static_cast<size_t>(spatial))
    return aoti::invalid(std::string("argument '") + name + "' must have 1 or " + std::to_string(spatial) +
                         " elements, got " + std::to_string(v.size()));
  Dims d{fill, fill, fill};
  for (int i = 0; i < spatial; ++i) d[3 - spatial + i] = v.size() == 1 ? v[0] : v[i];
  return d;
}

/// Exactly `spatial` values (output_size of the adaptive and fractional pools).
inline Result<Dims> exact_dims_arg(const int64_t* ptr, int64_t len, int spatial, const char* name) {
  KILN_ASSIGN_OR_RETURN(std::span<const int64_t> v, aoti::int_array_arg(ptr, len, name));
  if (v.size() != static_cast<size_t>(spatial))
    return aoti::invalid(std::string("argument '") + name + "' must have " + std::to_string(spatial) +
                         " elements, got " + std::to_string(v.size()));
  Dims d{1, 1, 1};
  for (int i = 0; i < spatial; ++i) {
    if (v[i] < 0) return aoti::invalid(std::string("argument '") + name + "' has a negative size");
    d[3 - spatial + i] = v[i];
  }
  return d;
}

/// Error unless every slot of `d` is > 0.
inline Error positive(const Dims& d, const char* name) {
  for (int64_t v : d)
    if (v <= 0) return aoti::invalid(std::string("argument '") + name + "' must be greater than zero");
  return Error::Ok;
}

/// ATen's pooled length: floor (or ceil) of the sliding-window count, where a
/// ceil-mode window must start inside the input or left padding.
inline int64_t pooled_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, bool ceil) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil ? stride - 1 : 0);
  int64_t out = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

/// Sliding-window output sizes with ATen's checks (padding at most half the
/// kernel, a non-empty output).
inline Result<Dims> window_output(const Planes& p, const Dims& k, const Dims& s, const Dims& pad, const Dims& dil,
                                  bool ceil) {
  Dims out{1, 1, 1};
  for (int i = 0; i < 3; ++i) {
    if (pad[i] < 0 || pad[i] > k[i] / 2)
      return aoti::invalid("argument 'padding' must be non-negative and at most half of kernel_size");
    out[i] = pooled_size(p.in[i], k[i], pad[i], s[i], dil[i], ceil);
    if (out[i] < 1)
      return aoti::invalid("the input " + aoti::shape_string(p.in) + " is too small for the window: output size " +
                           std::to_string(out[i]) + " would be empty");
  }
  return out;
}

/// The result shape: (N, C, out...) or (C, out...), with `spatial` dims.
inline std::vector<int64_t> result_sizes(const Planes& p, const Dims& out, int spatial) {
  std::vector<int64_t> sizes;
  if (p.batched) sizes.push_back(p.batch);
  sizes.push_back(p.channels);
  for (int i = 3 - spatial; i < 3; ++i) sizes.push_back(out[i]);
  return sizes;
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

/// ATen's adaptive window along one dimension: [floor(o*in/out), ceil((o+1)*in/out)).
inline int64_t adaptive_start(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }
inline int64_t adaptive_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

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
