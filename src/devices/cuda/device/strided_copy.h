// The strided device copy kernel: dst[i] = src[i] over an N-d index space
// (N <= 8) with independent element strides on each side (src strides may be
// 0 to broadcast). Works on any dtype by element size. Used for copies of
// non-contiguous device tensors and by the ops to make contiguous operands.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kiln/error.h"

namespace kiln::cudadev {

inline constexpr int64_t kMaxStridedCopyDims = 8;

/// Enqueues the copy on `stream`; returns once launched (asynchronous).
/// Validates rank (<= 8), sizes (>= 0) and element size (1, 2, 4, 8 or 16);
/// an empty index space is a no-op. Misaligned pointers fall back to a
/// byte-wise copy rather than faulting.
Error launch_strided_copy(void* dst, const int64_t* dst_strides, const void* src, const int64_t* src_strides,
                          const int64_t* sizes, int64_t ndim, size_t element_size, cudaStream_t stream);

}  // namespace kiln::cudadev
