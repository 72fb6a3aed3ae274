// Shared helpers of the CUDA pooling ops (avg/max/adaptive pooling and max
// unpooling over 2 or 3 spatial dims): the geometry every device shares
// (shims/common/pool_args.h) taken from a TensorRef, the dtypes ATen's CUDA
// kernels take, the result layout, and the kernels' view of the tensors
// (kernels/pool_kernel.h).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "devices/cuda/kernels/pool_kernel.h"
#include "shims/common/pool_args.h"
#include "shims/cuda/op_util.h"

namespace kiln::cudadev::pool {

using aoti::pool::Dims;
using aoti::pool::Planes;

/// Checks `self` is (N, C, spatial...) or (C, spatial...) with `spatial` dims
/// and every non-batch dimension non-empty (ATen allows only N == 0).
inline Result<Planes> planes_of(const TensorRef& self, int spatial, const char* name = "self") {
  return aoti::pool::planes_of(self.sizes, spatial, name, self.describe());
}

/// Error unless `dtype` is one ATen's CUDA kernel takes: floating, and
/// int8/uint8/int16/int32/int64 where `integers` (max pooling, unpooling).
inline Error pool_dtype(DType dtype, bool integers, const char* name = "self") {
  if (is_floating_dtype(dtype)) return Error::Ok;
  if (integers && (dtype == DType::Int64 || dtype == DType::Int32 || dtype == DType::Int16 ||
                   dtype == DType::Int8 || dtype == DType::UInt8))
    return Error::Ok;
  return set_error(Error::NotSupported, std::string("argument '") + name + "' has dtype " + dtype_name(dtype) +
                                            ", which this op does not support on CUDA");
}

/// Whether the result of a batched (4-d for 2-d pools, 5-d for 3-d pools)
/// channels-last input is allocated channels-last, as ATen's CUDA kernels do
/// for the ops that pass `keeps_format` (the input's suggest_memory_format).
inline bool channels_last_result(const TensorRef& self, int spatial, bool keeps_format) {
  return keeps_format && self.dim() == spatial + 2 && aoti::strides_like_channels_last(self.sizes, self.strides);
}

/// A new CUDA tensor of `sizes` on self's device, contiguous or channels-last.
inline Result<OwnedHandle> new_result(const TensorRef& self, std::span<const int64_t> sizes, DType dtype,
                                      bool channels_last) {
  const std::vector<int64_t> strides =
      channels_last ? aoti::channels_last_strides(sizes) : contiguous_strides(sizes);
  return new_tensor(sizes, strides, dtype, static_cast<int32_t>(DeviceType::CUDA), self.device_index);
}

/// The (n, c, t, h, w) element strides of a pooling tensor of `spatial`
/// dims (`strides` as the tensor has them): 0 for a missing batch or depth.
inline void five_strides(std::span<const int64_t> strides, bool batched, int spatial, int64_t dst[5]) {
  for (int i = 0; i < 5; ++i) dst[i] = 0;
  size_t d = 0;
  if (batched) dst[0] = strides[d++];
  dst[1] = strides[d++];
  for (int i = 3 - spatial; i < 3; ++i) dst[2 + i] = strides[d++];
}

/// The kernel's geometry of input `self` (planes `p`) and a result of
/// spatial sizes `out` with strides `out_strides`.
inline PoolGeometry geometry(const TensorRef& self, const Planes& p, const Dims& out,
                             std::span<const int64_t> out_strides, int spatial, bool channels_last) {
  PoolGeometry g;
  g.batch = p.batch;
  g.channels = p.channels;
  for (int i = 0; i < 3; ++i) {
    g.in[i] = p.in[i];
    g.out[i] = out[i];
  }
  five_strides(self.strides, p.batched, spatial, g.in_strides);
  five_strides(out_strides, p.batched, spatial, g.out_strides);
  g.channels_last = channels_last;
  return g;
}

}  // namespace kiln::cudadev::pool
