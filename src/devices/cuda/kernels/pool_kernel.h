// Pooling over 2 or 3 spatial dims on the GPU (kernels/pool_kernel.cu): one
// thread per result element reads its window straight from the input with
// the input's strides (no copy for strided, offset or channels-last inputs)
// and accumulates in float (float64 for float64), for avg_pool, max_pool
// (with indices), the adaptive and fractional pools; and max_unpool's scatter. A 2-d op is
// the 3-d case with a depth of 1.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// The shapes and element strides a pooling kernel works on. Strides are in
/// (n, c, t, h, w) order; an unbatched tensor has batch 1 and stride 0 there.
/// A max pool's values and indices share `out_strides` (same sizes, same layout).
struct PoolGeometry {
  int64_t batch = 1;
  int64_t channels = 1;
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
  int64_t in_strides[5] = {};
  int64_t out_strides[5] = {};
  /// Adaptive windows [floor(o*in/out), ceil((o+1)*in/out)) instead of kernel/stride/padding/dilation.
  bool adaptive = false;
  /// Threads walk the result channels fastest (a channels-last result), else width fastest.
  bool channels_last = false;
  /// avg_pool: the divisor counts padded positions (count_include_pad).
  bool count_include_pad = true;
  /// avg_pool: divisor_override, 0 for none.
  int64_t divisor = 0;
};

/// Floating dtypes (float32, float64, float16, bfloat16) only.
Error launch_avg_pool(const void* in, void* out, DType dtype, const PoolGeometry& g, cudaStream_t stream);

/// Window maxima and the flat position of each within its (n, c) plane
/// (int64, in[0]*in[1]*in[2] elements per plane). A NaN wins (the last of a
/// window), otherwise the first strict maximum. Floating dtypes and
/// int8/uint8/int16/int32/int64.
Error launch_max_pool(const void* in, void* values, int64_t* indices, DType dtype, const PoolGeometry& g,
                      cudaStream_t stream);

/// Where fractional_max_pool reads its random_samples (self's dtype): element
/// strides for (n, c, column), and for each slot of PoolGeometry's (t, h, w)
/// the column that places its windows (-1: one window at 0, the depth of a
/// 2-d op).
struct FractionalSamples {
  int64_t strides[3] = {};
  int column[3] = {-1, -1, -1};
};

/// fractional_max_pool: maxima (and flat positions, as launch_max_pool) of
/// g.kernel-sized windows whose starts come from each plane's samples as
/// ATen's CUDA kernels compute them: in float (float64 for float64), the last
/// window ending at the input's end. A start outside the input (a sample
/// outside [0, 1)) is clamped into it, so nothing is read out of bounds.
/// Floating dtypes only; g.channels_last is false (the result is contiguous).
Error launch_fractional_max_pool(const void* in, const void* samples, const FractionalSamples& s, void* values,
                                 int64_t* indices, DType dtype, const PoolGeometry& g, cudaStream_t stream);

/// max_unpool: writes each input element to the flat position `indices`
/// names within its plane of the contiguous result `out` (already zeroed;
/// g.out holds the result's spatial sizes, g.in the input's, g.in_strides
/// the input's strides and `index_strides` the indices'). A position outside
/// the plane is skipped, and the number of the first such input element
/// (row-major) is stored with atomicMin into `first_bad` when it is not null.
Error launch_max_unpool(const void* in, const int64_t* indices, const int64_t index_strides[5], void* out,
                        DType dtype, const PoolGeometry& g, unsigned long long* first_bad, cudaStream_t stream);

}  // namespace kiln::cudadev
