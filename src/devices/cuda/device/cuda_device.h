// CUDA device: a stream-ordered caching allocator (cudaMallocFromPoolAsync on
// one memory pool per GPU that keeps freed memory: release threshold
// UINT64_MAX) with blocks freed on Kiln's own streams kept for those streams'
// next runs (stream_block_cache.h), copies with cudaMemcpyAsync, and the
// strided copy kernel.
//
// Streams: a null StreamHandle means the calling thread's current stream on
// that device (cuda_thread_state.h), so memory that kiln::Tensor allocates
// inside a model run (under the model's stream guard) is stream-ordered on the
// run's stream. Frees are ordered on the stream passed, or the thread's current
// stream at free time; memory used on a non-blocking stream must be
// synchronised by its user before the last reference goes from another stream.
//
// Thread-safety: all members may be called concurrently; the bookkeeping is
// under one mutex, CUDA calls are made outside it.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "devices/cuda/device/stream_block_cache.h"
#include "core/device_interface.h"

namespace kiln::cudadev {

struct AllocatorStats {
  uint64_t bytes_in_use = 0;
  uint64_t peak_bytes_in_use = 0;
  uint64_t bytes_reserved = 0;
  uint64_t allocations_in_use = 0;
};

class CudaDevice final : public DeviceInterface {
 public:
  DeviceType type() const noexcept override { return DeviceType::CUDA; }
  int device_count() const noexcept override;
  Result<void*> allocate(size_t nbytes, int index, StreamHandle stream) override;
  /// Frees memory from allocate(). `index` -1 means "the device it was
  /// allocated on" (looked up); unknown pointers are logged and ignored.
  void free(void* ptr, int index, StreamHandle stream) noexcept override;
  /// Any direction (cudaMemcpyDefault). Copies that read or write host memory
  /// are complete when this returns (the stream is synchronised: the host side
  /// may be a temporary the caller frees next); device-to-device copies are
  /// only ordered on the stream.
  Error copy(void* dst, const void* src, size_t nbytes, CopyKind kind, int index, StreamHandle stream) override;
  Error synchronize(int index, StreamHandle stream) override;

  /// Strided device-to-device copy (see kiln::cuda::copy_strided).
  Error copy_strided(void* dst, const int64_t* dst_strides, const void* src, const int64_t* src_strides,
                     const int64_t* sizes, int64_t ndim, size_t element_size, int index,
                     StreamHandle stream) override;

  /// A blocking stream (cudaStreamDefault flags): it orders with the legacy
  /// default stream, so frees made on the default stream (the allocator's
  /// choice when no stream is current) and tensors produced there by other
  /// code are safe without extra synchronisation.
  Result<StreamHandle> create_stream(int index) override;
  void destroy_stream(int index, StreamHandle stream) noexcept override;
  /// The thread's current stream on `index` (-1: the current device).
  StreamHandle current_stream(int index) noexcept override;
  /// cudaDevAttrComputeCapabilityMajor * 10 + ...Minor.
  Result<int> compute_capability(int index) override;

  /// Pinned, multi-threaded staging for large uploads (cuda_upload.h).
  Error upload(std::span<const UploadRegion> regions, int index) override;
  /// Starts pinning the staging buffers in the background (cuda_upload.h).
  void prepare_upload(size_t nbytes, int index) noexcept override;
  /// cudaMalloc, outside the pool (see DeviceInterface); counted in stats()
  /// like pool memory, and cudaFree'd by free(), which waits for the device.
  Result<void*> allocate_long_lived(size_t nbytes, int index) override;

  /// CUDA graphs (cuda_graph_capture.h): while the calling thread records,
  /// allocate() on it returns graph-owned memory, and frees of pool memory are
  /// held back until end_capture (which then fails the recording).
  Error begin_capture(int index, StreamHandle stream) override;
  Result<GraphHandle> end_capture(int index, StreamHandle stream) override;
  bool stream_capturable(int index, StreamHandle stream) noexcept override;
  Error launch_graph(int index, GraphHandle graph, StreamHandle stream) override;
  void destroy_graph(int index, GraphHandle graph) noexcept override;

  /// Synchronises device `index`, then unloads the kernel modules the library
  /// loaded (kernel_modules.h).
  void release_library_kernels(int index, const void* library_base) noexcept override;

  Result<AllocatorStats> stats(int index);
  Error reset_peak(int index);
  Error release_cached(int index);

  /// The process-wide instance. Deliberately never destroyed: tensors freed by
  /// other static destructors at exit must still find it.
  static CudaDevice& instance();

 private:
  CudaDevice() = default;
  // The pool of device `index`, created on first use.
  Result<void*> pool_for(int index);

  struct Block {
    size_t nbytes;
    int device;
    bool long_lived = false;  // from allocate_long_lived: cudaFree, not the pool
  };
  struct Counters {
    uint64_t in_use = 0;
    uint64_t peak = 0;
    uint64_t count = 0;
  };
  // Records a block handed out (bookkeeping and counters); the caller holds mutex_.
  void note_allocated(void* ptr, size_t nbytes, int device, bool long_lived = false);
  // Frees the blocks handed back by StreamBlockCache::drain_*, each on its stream.
  static void free_drained(const std::vector<StreamBlockCache::Entry>& drained) noexcept;
  // Frees every block of `device` kept for reuse (to trim, or before retrying
  // an allocation that ran out of memory).
  void release_reusable(int device) noexcept;

  std::mutex mutex_;
  std::unordered_map<void*, Block> blocks_;
  // Whether blocks freed on `s` may wait in reusable_ for its next allocation;
  // the caller holds mutex_. See the definition for which streams qualify.
  bool keeps_blocks_for(void* s) const;

  // Blocks freed on Kiln's own streams and on the legacy default stream, for
  // their next run (stream_block_cache.h).
  StreamBlockCache reusable_{kReusableBytesPerDevice, kReusableBlocksPerSize};
  std::unordered_set<void*> own_streams_;
  static constexpr uint64_t kReusableBytesPerDevice = uint64_t{2} << 30;
  static constexpr size_t kReusableBlocksPerSize = 64;
  std::unordered_map<int, void*> pools_;  // cudaMemPool_t per device
  std::unordered_map<int, Counters> counters_;
};

}  // namespace kiln::cudadev
