// CUDA-specific controls and statistics. Free of CUDA headers: these calls are
// answered by the CUDA device plugin (libkiln_cuda.so) when it is loaded, and
// fail with Error::NotSupported (message says why) when it is not: Kiln was
// built without CUDA, the plugin or the CUDA runtime library is missing, or
// no GPU is visible.
//
// Thread-safety: every function here may be called from any thread.
#pragma once

#include <cstdint>

#include "kiln/error.h"
#include "kiln/export.h"

namespace kiln::cuda {

/// True when the CUDA device is registered (plugin loaded, at least one GPU).
/// Loads the plugin on first call (same as the first CUDA tensor would).
KILN_API bool is_available() noexcept;

/// Number of visible GPUs (0 when the CUDA device is not available).
KILN_API int device_count() noexcept;

/// Counters of Kiln's stream-ordered caching allocator for one device.
struct MemoryStats {
  uint64_t bytes_in_use = 0;       ///< Bytes of live Kiln allocations (as requested).
  uint64_t peak_bytes_in_use = 0;  ///< Highest bytes_in_use since start or the last reset.
  uint64_t bytes_reserved = 0;     ///< Bytes the allocator's memory pool holds from the driver
                                   ///< (live allocations plus cached free memory).
  uint64_t allocations_in_use = 0; ///< Number of live Kiln allocations.
};

/// Allocator statistics of `device` (>= 0).
KILN_API Result<MemoryStats> memory_stats(int device);

/// Sets peak_bytes_in_use to the current bytes_in_use.
KILN_API Error reset_peak_memory_stats(int device);

/// Waits for `device` to be idle and returns cached free memory of Kiln's pool
/// to the driver. Live allocations are untouched.
KILN_API Error release_cached_memory(int device);

/// Whether float32 matrix products (cuBLASLt) and convolutions (cuDNN) may use
/// TF32 tensor cores. Default off (like torch.backends.cuda.matmul.allow_tf32),
/// unless the environment variable KILN_CUDA_ALLOW_TF32 is 1/true/on when the
/// plugin loads. Process-wide; affects calls made after it returns.
KILN_API Error set_allow_tf32(bool allow);
KILN_API Result<bool> allow_tf32();

/// Copies a strided tensor of `ndim` (<= 8) dimensions of `sizes` between two
/// device buffers on `device`: element i of dst (at dst + sum(i_d * dst_strides[d])
/// elements) gets the matching element of src. Strides are in elements and may
/// be 0 in src (broadcast). `element_size` is 1, 2, 4, 8 or 16 bytes. Ordered on
/// `stream` (a cudaStream_t; null = the calling thread's current stream) and
/// asynchronous with respect to the host. The memory must not overlap.
KILN_API Error copy_strided(void* dst, const int64_t* dst_strides, const void* src, const int64_t* src_strides,
                            const int64_t* sizes, int64_t ndim, size_t element_size, int device, void* stream);

}  // namespace kiln::cuda
