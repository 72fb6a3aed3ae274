#include "devices/cuda/device/cuda_device.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/device/cuda_graph_capture.h"
#include "devices/cuda/device/cuda_upload.h"
#include "devices/cuda/device/kernel_modules.h"
#include "devices/cuda/device/cuda_thread_state.h"
#include "devices/cuda/device/strided_copy.h"
#include "kiln/log.h"

namespace kiln::cudadev {

CudaDevice& CudaDevice::instance() {
  static CudaDevice* device = new CudaDevice();  // never destroyed, see header
  return *device;
}

int CudaDevice::device_count() const noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

Result<void*> CudaDevice::pool_for(int index) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pools_.find(index);
    if (it != pools_.end()) return it->second;
  }
  // A pool of our own (not the device's default pool) so Kiln's caching policy
  // never changes memory behaviour of other CUDA code in the process.
  cudaMemPoolProps props;
  std::memset(&props, 0, sizeof(props));
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = index;
  cudaMemPool_t pool = nullptr;
  KILN_RETURN_IF_ERROR(
      cuda_status(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate for CUDA device " + std::to_string(index)));
  // Keep freed memory in the pool instead of returning it to the driver at each
  // synchronisation: models allocate the same intermediates on every run.
  uint64_t threshold = std::numeric_limits<uint64_t>::max();
  Error err = cuda_status(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
                          "cudaMemPoolSetAttribute(ReleaseThreshold)");
  if (err != Error::Ok) {
    (void)cudaMemPoolDestroy(pool);
    return err;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = pools_.emplace(index, pool);
  if (!inserted) (void)cudaMemPoolDestroy(pool);  // another thread won the race
  return it->second;
}

Result<void*> CudaDevice::allocate(size_t nbytes, int index, StreamHandle stream) {
  KILN_ASSIGN_OR_RETURN(int device, resolve_device(index));
  if (CaptureArena* arena = active_capture_arena()) return arena->allocate(nbytes);
  auto s = stream ? static_cast<cudaStream_t>(stream) : cudadev::current_stream(device);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (void* ptr = reusable_.take(device, s, nbytes)) {
      note_allocated(ptr, nbytes, device);
      return ptr;
    }
  }
  ScopedDevice scoped(device);
  KILN_RETURN_IF_ERROR(scoped.status());
  KILN_ASSIGN_OR_RETURN(void* pool_ptr, pool_for(device));
  auto pool = static_cast<cudaMemPool_t>(pool_ptr);
  void* ptr = nullptr;
  cudaError_t status = cudaMallocFromPoolAsync(&ptr, nbytes, pool, s);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    // Blocks kept for reuse (of other sizes or streams) go back to the pool first.
    release_reusable(device);
    // Frees still pending on other streams become reusable once they complete:
    // wait for the device and try once more, unless the stream is being
    // captured into a graph (synchronising would invalidate the capture).
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &capture) == cudaSuccess && capture == cudaStreamCaptureStatusNone &&
        cudaDeviceSynchronize() == cudaSuccess)
      status = cudaMallocFromPoolAsync(&ptr, nbytes, pool, s);
  }
  if (status != cudaSuccess) {
    uint64_t in_use = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      in_use = counters_[device].in_use;
    }
    return cuda_status(status, "CUDA allocation of " + std::to_string(nbytes) + " bytes on device " +
                                   std::to_string(device) + " (" + std::to_string(in_use) +
                                   " bytes in use by Kiln) failed");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  note_allocated(ptr, nbytes, device);
  return ptr;
}

Result<void*> CudaDevice::allocate_long_lived(size_t nbytes, int index) {
  KILN_ASSIGN_OR_RETURN(int device, resolve_device(index));
  ScopedDevice scoped(device);
  KILN_RETURN_IF_ERROR(scoped.status());
  void* ptr = nullptr;
  cudaError_t status = cudaMalloc(&ptr, nbytes);
  if (status == cudaErrorMemoryAllocation) {
    // The pool may hold freed memory the driver could hand out: give it back.
    (void)cudaGetLastError();
    (void)release_cached(device);
    status = cudaMalloc(&ptr, nbytes);
  }
  if (status != cudaSuccess)
    return cuda_status(status, "cudaMalloc of " + std::to_string(nbytes) + " bytes on device " +
                                   std::to_string(device) + " for long-lived memory (weights)");
  std::lock_guard<std::mutex> lock(mutex_);
  note_allocated(ptr, nbytes, device, /*long_lived=*/true);
  return ptr;
}

void CudaDevice::prepare_upload(size_t nbytes, int index) noexcept {
  auto device = resolve_device(index);
  if (device.ok()) cudadev::prepare_upload(*device, nbytes);
}

void CudaDevice::note_allocated(void* ptr, size_t nbytes, int device, bool long_lived) {
  blocks_[ptr] = Block{nbytes, device, long_lived};
  Counters& c = counters_[device];
  c.in_use += nbytes;
  c.count += 1;
  if (c.in_use > c.peak) c.peak = c.in_use;
}

void CudaDevice::free(void* ptr, int index, StreamHandle stream) noexcept {
  if (ptr == nullptr) return;
  Block block{0, index};
  cudaStream_t s = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(ptr);
    if (it == blocks_.end()) {
      // Not pool memory: graph memory stays with its graph; anything else is
      // not Kiln's. Looked up only here, so plain frees never pay for graphs.
      if (!release_arena_block(ptr)) KILN_LOG(Warning, "CUDA free of a pointer Kiln did not allocate; ignored");
      return;
    }
    if (note_free_during_capture(ptr)) return;  // freed again after the recording
    block = it->second;
    blocks_.erase(it);
    Counters& c = counters_[block.device];
    c.in_use -= block.nbytes;
    c.count -= 1;
    s = stream ? static_cast<cudaStream_t>(stream) : cudadev::current_stream(block.device);
    try {
      if (!block.long_lived && keeps_blocks_for(s) && reusable_.keep(block.device, s, ptr, block.nbytes))
        return;
    } catch (...) {
      // Out of host memory: freed to the pool below instead.
    }
  }
  ScopedDevice scoped(block.device);
  if (scoped.status() != Error::Ok) return;
  // cudaFree waits for the device: work still reading the memory finishes first.
  const cudaError_t status = block.long_lived ? cudaFree(ptr) : cudaFreeAsync(ptr, s);
  if (status != cudaSuccess) {
    // At process exit the driver may already be gone; nothing useful to do.
    (void)cudaGetLastError();
    KILN_LOG(Debug, std::string(block.long_lived ? "cudaFree" : "cudaFreeAsync") + " failed: " +
                        cudaGetErrorString(status));
  }
}

Error CudaDevice::copy(void* dst, const void* src, size_t nbytes, CopyKind kind, int index, StreamHandle stream) {
  if (nbytes == 0) return Error::Ok;
  if (dst == nullptr || src == nullptr) return set_error(Error::InvalidArgument, "CUDA copy with a null pointer");
  KILN_ASSIGN_OR_RETURN(int device, resolve_device(index));
  ScopedDevice scoped(device);
  KILN_RETURN_IF_ERROR(scoped.status());
  auto s = stream ? static_cast<cudaStream_t>(stream) : cudadev::current_stream(device);
  KILN_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, s),
                                   "cudaMemcpyAsync of " + std::to_string(nbytes) + " bytes"));
  if (kind != CopyKind::DeviceToDevice)
    KILN_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(s), "cudaStreamSynchronize after a host copy"));
  return Error::Ok;
}

Error CudaDevice::synchronize(int index, StreamHandle stream) {
  KILN_ASSIGN_OR_RETURN(int device, resolve_device(index));
  ScopedDevice scoped(device);
  KILN_RETURN_IF_ERROR(scoped.status());
  auto s = stream ? static_cast<cudaStream_t>(stream) : cudadev::current_stream(device);
  return cuda_status(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

Error CudaDevice::copy_strided(void* dst, const int64_t* dst_strides, const void* src, const int64_t* src_strides,
                               const int64_t* sizes, int64_t ndim, size_t element_size, int index,
                               StreamHandle stream) {
  KILN_ASSIGN_OR_RETURN(int device, resolve_device(index));
  ScopedDevice scoped(device);
  KILN_RETURN_IF_ERROR(scoped.status());
  auto s = stream ? static_cast<cudaStream_t>(stream) : cudadev::current_stream(device);
  return launch_strided_copy(dst, dst_strides, src, src_strides, sizes, ndim, element_size, s);
}

Result<StreamHandle> CudaDevice::create_stream(int index) {
  KILN_ASSIGN_OR_RETURN(int device, resolve_device(index));
  ScopedDevice scoped(device);
  KILN_RETURN_IF_ERROR(scoped.status());
  cudaStream_t stream = nullptr;
  KILN_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&stream, cudaStreamDefault),
                                   "cudaStreamCreate on CUDA device " + std::to_string(device)));
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    own_streams_.insert(stream);
  } catch (...) {
    // Out of host memory: the stream works, its frees are just not kept for reuse.
  }
  return static_cast<StreamHandle>(stream);
}

// Streams Kiln created: it orders all their work and drains their blocks
// before destroying them. The legacy default stream (a null handle in this
// library, built without per-thread default streams, or cudaStreamLegacy):
// one stream for the whole process, never destroyed and never captured, so a
// block freed there by one thread is ordered before any later allocation's
// work there from any thread. This is the stream a torch caller's work runs on
// by default (stream=caller). Not other caller streams, which may be captured
// into the caller's graph or destroyed behind Kiln's back, nor
// cudaStreamPerThread, which names a different stream on each thread.
bool CudaDevice::keeps_blocks_for(void* s) const {
  return s == nullptr || s == static_cast<void*>(cudaStreamLegacy) || own_streams_.count(s) != 0;
}

void CudaDevice::free_drained(const std::vector<StreamBlockCache::Entry>& drained) noexcept {
  for (const StreamBlockCache::Entry& e : drained) {
    ScopedDevice scoped(e.device);
    if (cudaFreeAsync(e.ptr, static_cast<cudaStream_t>(e.stream)) != cudaSuccess) (void)cudaGetLastError();
  }
}

void CudaDevice::release_reusable(int device) noexcept {
  std::vector<StreamBlockCache::Entry> drained;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      drained = reusable_.drain_device(device);
    } catch (...) {
      // Out of host memory: some blocks may stay allocated in the pool until exit.
    }
  }
  free_drained(drained);
}

void CudaDevice::destroy_stream(int index, StreamHandle stream) noexcept {
  if (stream == nullptr) return;
  auto device = resolve_device(index);
  if (!device.ok()) return;
  // Its kept blocks are freed on it, in order after its work, before it goes.
  std::vector<StreamBlockCache::Entry> drained;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    own_streams_.erase(stream);
    try {
      drained = reusable_.drain_stream(stream);
    } catch (...) {
      // Out of host memory: those blocks stay in the pool, unused, until exit.
    }
  }
  free_drained(drained);
  ScopedDevice scoped(*device);
  const cudaError_t status = cudaStreamDestroy(static_cast<cudaStream_t>(stream));
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // at exit the driver may be gone already
    KILN_LOG(Debug, std::string("cudaStreamDestroy failed: ") + cudaGetErrorString(status));
  }
}

StreamHandle CudaDevice::current_stream(int index) noexcept {
  auto device = resolve_device(index);
  if (!device.ok()) return nullptr;
  return cudadev::current_stream(*device);
}

Result<int> CudaDevice::compute_capability(int index) {
  KILN_ASSIGN_OR_RETURN(int device, resolve_device(index));
  if (device >= device_count())
    return set_error(Error::InvalidArgument, "CUDA device index " + std::to_string(device) + " is out of range");
  int major = 0, minor = 0;
  KILN_RETURN_IF_ERROR(cuda_status(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                                   "cudaDeviceGetAttribute(ComputeCapabilityMajor)"));
  KILN_RETURN_IF_ERROR(cuda_status(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device),
                                   "cudaDeviceGetAttribute(ComputeCapabilityMinor)"));
  return major * 10 + minor;
}

Error CudaDevice::upload(std::span<const UploadRegion> regions, int index) {
  KILN_ASSIGN_OR_RETURN(int device, resolve_device(index));
  return upload_regions(device, regions);
}

Error CudaDevice::begin_capture(int index, StreamHandle stream) {
  KILN_ASSIGN_OR_RETURN(int device, resolve_device(index));
  auto s = stream ? static_cast<cudaStream_t>(stream) : cudadev::current_stream(device);
  return cudadev::begin_capture(device, s);
}

Result<GraphHandle> CudaDevice::end_capture(int index, StreamHandle stream) {
  KILN_ASSIGN_OR_RETURN(int device, resolve_device(index));
  auto s = stream ? static_cast<cudaStream_t>(stream) : cudadev::current_stream(device);
  std::vector<void*> deferred;
  auto graph = cudadev::end_capture(device, s, &deferred);
  // Not recording any more: these go back to the pool now, ordered after the
  // eager work that used them (the recording itself never ran).
  for (void* p : deferred) free(p, device, s);
  if (!graph.ok()) return graph.error();
  return static_cast<GraphHandle>(graph->release());
}

bool CudaDevice::stream_capturable(int index, StreamHandle stream) noexcept {
  auto device = resolve_device(index);
  if (!device.ok()) return false;
  return is_capturable(stream ? static_cast<cudaStream_t>(stream) : cudadev::current_stream(*device));
}

Error CudaDevice::launch_graph(int index, GraphHandle graph, StreamHandle stream) {
  if (graph == nullptr) return set_error(Error::InvalidArgument, "launch of a null CUDA graph");
  KILN_ASSIGN_OR_RETURN(int device, resolve_device(index));
  ScopedDevice scoped(device);
  KILN_RETURN_IF_ERROR(scoped.status());
  auto s = stream ? static_cast<cudaStream_t>(stream) : cudadev::current_stream(device);
  return cuda_status(cudaGraphLaunch(static_cast<CapturedGraph*>(graph)->exec, s), "cudaGraphLaunch");
}

void CudaDevice::destroy_graph(int index, GraphHandle graph) noexcept {
  (void)index;
  delete static_cast<CapturedGraph*>(graph);
}

void CudaDevice::release_library_kernels(int index, const void* library_base) noexcept {
  if (library_module_count(library_base) == 0) return;
  auto device = resolve_device(index);
  if (device.ok()) {
    ScopedDevice scoped(*device);
    // Kernels of the library may still be queued (outputs kept on the device).
    (void)cudaDeviceSynchronize();
    (void)cudaGetLastError();
  }
  release_library_modules(library_base);
}

Result<AllocatorStats> CudaDevice::stats(int index) {
  if (index < 0 || index >= device_count())
    return set_error(Error::InvalidArgument, "CUDA device index " + std::to_string(index) + " is out of range");
  AllocatorStats out;
  void* pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const Counters& c = counters_[index];
    out.bytes_in_use = c.in_use;
    out.peak_bytes_in_use = c.peak;
    out.allocations_in_use = c.count;
    auto it = pools_.find(index);
    if (it != pools_.end()) pool = it->second;
  }
  if (pool != nullptr) {
    uint64_t reserved = 0;
    KILN_RETURN_IF_ERROR(cuda_status(cudaMemPoolGetAttribute(static_cast<cudaMemPool_t>(pool),
                                                             cudaMemPoolAttrReservedMemCurrent, &reserved),
                                     "cudaMemPoolGetAttribute(ReservedMemCurrent)"));
    out.bytes_reserved = reserved;
  }
  return out;
}

Error CudaDevice::reset_peak(int index) {
  if (index < 0 || index >= device_count())
    return set_error(Error::InvalidArgument, "CUDA device index " + std::to_string(index) + " is out of range");
  std::lock_guard<std::mutex> lock(mutex_);
  Counters& c = counters_[index];
  c.peak = c.in_use;
  return Error::Ok;
}

Error CudaDevice::release_cached(int index) {
  if (index < 0 || index >= device_count())
    return set_error(Error::InvalidArgument, "CUDA device index " + std::to_string(index) + " is out of range");
  void* pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pools_.find(index);
    if (it != pools_.end()) pool = it->second;
  }
  if (pool == nullptr) return Error::Ok;
  release_reusable(index);
  ScopedDevice scoped(index);
  KILN_RETURN_IF_ERROR(scoped.status());
  KILN_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  KILN_CUDA_RETURN_IF_ERROR(cudaMemPoolTrimTo(static_cast<cudaMemPool_t>(pool), 0));
  return Error::Ok;
}

}  // namespace kiln::cudadev
