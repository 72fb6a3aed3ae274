// The pooling ops' geometry, checked as ATen checks it, for every device's
// avg/max/adaptive pooling and max unpooling over 2 or 3 spatial dims: the
// input's rank and non-empty dims, the per-dimension argument lists
// (kernel_size, stride, padding, dilation, output_size), ATen's pooled-size
// rule with ceil_mode, and the adaptive windows. A 2-d op is the 3-d case
// with a depth of 1: every Dims holds 3 values, 2-d ops fill the first with 1
// (or 0 for padding). The devices differ only in how they compute and in the
// layout of the result.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "shims/common/shim_util.h"

namespace kiln::aoti::pool {

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

/// Checks `sizes` (argument `name`, `described` for messages) is (N, C,
/// spatial...) or (C, spatial...) with `spatial` dims and every non-batch
/// dimension non-empty (ATen allows only N == 0).
inline Result<Planes> planes_of(std::span<const int64_t> sizes, int spatial, const char* name,
                                const std::string& described) {
  const int64_t rank = static_cast<int64_t>(sizes.size());
  if (rank != spatial + 1 && rank != spatial + 2)
    return invalid(std::string("argument '") + name + "' must be " + std::to_string(spatial + 1) + "-d or " +
                   std::to_string(spatial + 2) + "-d (batched), got " + described);
  Planes p;
  p.batched = rank == spatial + 2;
  const int64_t first = p.batched ? 1 : 0;
  for (int64_t d = first; d < rank; ++d)
    if (sizes[static_cast<size_t>(d)] == 0)
      return invalid(std::string("argument '") + name + "' has an empty non-batch dimension: " + described);
  p.batch = p.batched ? sizes[0] : 1;
  p.channels = sizes[static_cast<size_t>(first)];
  for (int i = 0; i < spatial; ++i) p.in[3 - spatial + i] = sizes[static_cast<size_t>(first + 1 + i)];
  return p;
}

/// A per-dimension list (1 value for all, or `spatial` values) placed in the
/// last `spatial` slots of a Dims whose leading slots hold `fill`. An empty
/// list gives `empty_default` when set, else is an error.
inline Result<Dims> dims_arg(const int64_t* ptr, int64_t len, int spatial, const char* name, int64_t fill,
                             const Dims* empty_default = nullptr) {
  KILN_ASSIGN_OR_RETURN(std::span<const int64_t> v, int_array_arg(ptr, len, name));
  if (v.empty() && empty_default) return *empty_default;
  if (v.size() != 1 && v.size() != static_cast<size_t>(spatial))
    return invalid(std::string("argument '") + name + "' must have 1 or " + std::to_string(spatial) +
                   " elements, got " + std::to_string(v.size()));
  Dims d{fill, fill, fill};
  for (int i = 0; i < spatial; ++i) d[3 - spatial + i] = v.size() == 1 ? v[0] : v[i];
  return d;
}

/// Exactly `spatial` non-negative values (output_size of the adaptive and
/// fractional pools and of max unpooling).
inline Result<Dims> exact_dims_arg(const int64_t* ptr, int64_t len, int spatial, const char* name) {
  KILN_ASSIGN_OR_RETURN(std::span<const int64_t> v, int_array_arg(ptr, len, name));
  if (v.size() != static_cast<size_t>(spatial))
    return invalid(std::string("argument '") + name + "' must have " + std::to_string(spatial) + " elements, got " +
                   std::to_string(v.size()));
  Dims d{1, 1, 1};
  for (int i = 0; i < spatial; ++i) {
    if (v[i] < 0) return invalid(std::string("argument '") + name + "' has a negative size");
    d[3 - spatial + i] = v[i];
  }
  return d;
}

/// Error unless every slot of `d` is > 0.
inline Error positive(const Dims& d, const char* name) {
  for (int64_t v : d)
    if (v <= 0) return invalid(std::string("argument '") + name + "' must be greater than zero");
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
      return invalid("argument 'padding' must be non-negative and at most half of kernel_size");
    out[i] = pooled_size(p.in[i], k[i], pad[i], s[i], dil[i], ceil);
    if (out[i] < 1)
      return invalid("the input " + shape_string(p.in) + " is too small for the window: output size " +
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

/// fractional_max_pool{2,3}d's kernel_size and output_size.
struct Fractional {
  Dims kernel{1, 1, 1};
  Dims out{1, 1, 1};
};

/// fractional_max_pool{2,3}d's arguments checked as ATen checks them for
/// input planes `p`: kernel_size and output_size of exactly `spatial` values
/// (kernel_size positive), every window fitting the input (ATen's 3-d check
/// is strict, its 2-d one is not), and random_samples of sizes
/// `sample_sizes` (`samples_described` for messages) (N', C, spatial) with
/// N' at least the input's N and C its channels.
inline Result<Fractional> fractional_args(const Planes& p, int spatial, const int64_t* kernel_size,
                                          int64_t kernel_size_len, const int64_t* output_size,
                                          int64_t output_size_len, std::span<const int64_t> sample_sizes,
                                          const std::string& samples_described) {
  Fractional f;
  KILN_ASSIGN_OR_RETURN(f.kernel, exact_dims_arg(kernel_size, kernel_size_len, spatial, "kernel_size"));
  KILN_RETURN_IF_ERROR(positive(f.kernel, "kernel_size"));
  KILN_ASSIGN_OR_RETURN(f.out, exact_dims_arg(output_size, output_size_len, spatial, "output_size"));
  for (int i = 3 - spatial; i < 3; ++i) {
    const int64_t reach = f.out[i] + f.kernel[i] - 1;
    const bool fits = spatial == 2 ? reach <= p.in[i] : reach < p.in[i];
    if (!fits)
      return invalid("argument 'kernel_size' " + std::to_string(f.kernel[i]) + " is too large for output size " +
                     std::to_string(f.out[i]) + " from input size " + std::to_string(p.in[i]));
  }
  if (sample_sizes.size() != 3 || sample_sizes[0] < p.batch || sample_sizes[1] != p.channels ||
      sample_sizes[2] != spatial)
    return invalid("argument 'random_samples' must be (N, C, " + std::to_string(spatial) +
                   ") for the input's N and C, got " + samples_described);
  return f;
}

/// The column of random_samples that places the windows along slot `slot` of
/// a Dims: samples hold (W, H) for 2-d ops and (T, H, W) for 3-d ones; -1 for
/// the depth slot of a 2-d op (one window at 0).
inline int fractional_sample_column(int spatial, int slot) {
  if (spatial == 3) return slot;
  return slot == 0 ? -1 : (slot == 1 ? 1 : 0);
}

/// ATen's adaptive window along one dimension: [floor(o*in/out), ceil((o+1)*in/out)).
inline int64_t adaptive_start(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }
inline int64_t adaptive_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

/// max_unpool's indices: int64 (positions within an output plane).
inline Error unpool_indices_dtype(DType dtype) {
  if (dtype != DType::Int64)
    return invalid(std::string("argument 'indices' has dtype ") + dtype_name(dtype) + ", expected int64");
  return Error::Ok;
}

/// max_unpool's indices: one per element of self.
inline Error unpool_indices_shape(std::span<const int64_t> indices, std::span<const int64_t> self) {
  if (!std::equal(indices.begin(), indices.end(), self.begin(), self.end()))
    return invalid("argument 'indices' has shape " + shape_string(indices) + ", expected self's " +
                   shape_string(self));
  return Error::Ok;
}

/// max_unpool3d's stride and padding, which ATen checks but the result does
/// not depend on: 3 of each, the strides positive. Nothing for 2-d.
inline Error unpool_stride_padding(int spatial, const int64_t* stride, int64_t stride_len,
                                   const int64_t* padding, int64_t padding_len) {
  if (spatial != 3) return Error::Ok;
  KILN_ASSIGN_OR_RETURN(std::span<const int64_t> s, int_array_arg(stride, stride_len, "stride"));
  KILN_ASSIGN_OR_RETURN(std::span<const int64_t> pad, int_array_arg(padding, padding_len, "padding"));
  if (s.size() != 3) return invalid("argument 'stride' must have 3 elements");
  if (pad.size() != 3) return invalid("argument 'padding' must have 3 elements");
  for (int64_t v : s)
    if (v <= 0) return invalid("argument 'stride' must be greater than zero");
  return Error::Ok;
}

/// The error for an index `at` outside an output plane of `out_plane`
/// elements, found when the indices are read (on the host or the device).
inline Error unpool_index_outside(int64_t at, int64_t out_plane) {
  return invalid("argument 'indices' holds " + std::to_string(at) + ", outside an output plane of " +
                 std::to_string(out_plane) + " elements");
}

}  // namespace kiln::aoti::pool
