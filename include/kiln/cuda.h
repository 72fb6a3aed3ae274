// CUDA-specific controls and statistics. Free of CUDA headers: these calls are
// answered by the CUDA device plugin (libkiln_cuda.so), loaded on the first
// call, and fail with Error::NotSupported (message says why) when it cannot
// be: Kiln was built without CUDA, the plugin or the CUDA runtime library is
// missing, no GPU is visible, or KILN_DISABLE_CUDA is set. (A Runtime whose
// own setting disable_cuda is on runs nothing on CUDA; these calls still
// answer for the process.)
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
/// TF32 tensor cores: setting cuda_allow_tf32 (docs/settings.md). Default off
/// (like torch.backends.cuda.matmul.allow_tf32). Process-wide; affects calls
/// made after it returns. InvalidState when KILN_CUDA_ALLOW_TF32 fixes it.
/// Works whether or not CUDA is available.
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

/// Compute capability of GPU `device` as 10 * major + minor (90 for H100).
KILN_API Result<int> compute_capability(int device);

/// Creates a CUDA stream (cudaStream_t, returned as void*) on `device`. It is
/// a blocking stream (orders with the legacy default stream). The caller owns
/// it: destroy it with destroy_stream once its work is done.
KILN_API Result<void*> create_stream(int device);
/// Destroys a stream from create_stream (or any cudaStream_t of `device`).
KILN_API Error destroy_stream(int device, void* stream);

/// The calling thread's current stream on `device`, as Kiln sees it (null =
/// the legacy default stream, which is where every thread starts). Kiln's
/// allocations, copies and fallback ops without an explicit stream use it,
/// and methods loaded with the aoti option stream="caller" run on it.
KILN_API Result<void*> current_stream(int device);
/// Sets the calling thread's current stream on `device`; returns the previous
/// one. The stream is borrowed: it must outlive its use as current stream.
KILN_API Result<void*> set_current_stream(int device, void* stream);

/// Scoped set_current_stream: makes `stream` current on `device` for this
/// thread and restores the previous stream on destruction. status() is not Ok
/// when the switch failed (nothing is restored then). Not copyable; use on one
/// thread.
///
///   kiln::cuda::StreamGuard guard(0, my_stream);   // aoti option stream="caller"
///   auto out = module.execute("forward", inputs);  // runs on my_stream, no sync
class KILN_API StreamGuard {
 public:
  StreamGuard(int device, void* stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;
  Error status() const noexcept { return status_; }

 private:
  int device_;
  void* previous_ = nullptr;
  Error status_ = Error::Ok;
};

}  // namespace kiln::cuda
