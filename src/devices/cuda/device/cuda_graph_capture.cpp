#include "devices/cuda/device/cuda_graph_capture.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/device/cuda_thread_state.h"
#include "kiln/log.h"

namespace kiln::cudadev {
namespace {

// Every live arena block, so that a free arriving after the recording (an
// output tensor dropped later) finds its arena. Arena state changes only under
// this mutex.
std::mutex& registry_mutex() {
  static auto* m = new std::mutex();  // never destroyed: frees can come from static destructors
  return *m;
}
std::unordered_map<void*, CaptureArena*>& registry() {
  static auto* r = new std::unordered_map<void*, CaptureArena*>();
  return *r;
}

struct Recording {
  int device = -1;
  cudaStream_t stream = nullptr;
  std::unique_ptr<CaptureArena> arena;
  std::vector<void*> held_frees;
  bool lost_free = false;  // a free could not be held back (out of host memory)
};
thread_local Recording* t_recording = nullptr;
// The arena of this thread's last failed recording, kept until its next
// recording starts: the caller still holds tensors the failed run allocated
// there and drops them after end_capture returns.
thread_local std::unique_ptr<CaptureArena> t_failed_arena;

}  // namespace

CaptureArena::~CaptureArena() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  ScopedDevice scoped(device_);
  for (const Block& b : blocks_) {
    registry().erase(b.ptr);
    const cudaError_t status = cudaFree(b.ptr);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();  // at process exit the driver may be gone
      KILN_LOG(Debug, std::string("cudaFree of a graph block failed: ") + cudaGetErrorString(status));
    }
  }
}

Result<void*> CaptureArena::allocate(size_t nbytes) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  Block* best = nullptr;
  for (Block& b : blocks_)
    if (!b.in_use && b.nbytes >= nbytes && (!best || b.nbytes < best->nbytes)) best = &b;
  if (best) {
    best->in_use = true;
    return best->ptr;
  }
  ScopedDevice scoped(device_);
  KILN_RETURN_IF_ERROR(scoped.status());
  void* ptr = nullptr;
  KILN_RETURN_IF_ERROR(cuda_status(cudaMalloc(&ptr, nbytes),
                                   "cudaMalloc of " + std::to_string(nbytes) + " bytes for a CUDA graph"));
  blocks_.push_back(Block{ptr, nbytes, true});
  registry()[ptr] = this;
  return ptr;
}

bool CaptureArena::release(void* ptr) noexcept {
  for (Block& b : blocks_)
    if (b.ptr == ptr) {
      b.in_use = false;
      return true;
    }
  return false;
}

CapturedGraph::~CapturedGraph() {
  if (exec) {
    ScopedDevice scoped(device);
    // Replays already queued must finish before the arena's memory goes
    // (cudaFree in the arena would also wait, but only for this device).
    (void)cudaDeviceSynchronize();
    (void)cudaGraphExecDestroy(exec);
    (void)cudaGetLastError();
  }
  arena.reset();
}

bool is_capturable(cudaStream_t stream) noexcept {
  return stream != nullptr && stream != cudaStreamLegacy && stream != cudaStreamPerThread;
}

Error begin_capture(int device, cudaStream_t stream) {
  if (t_recording)
    return set_error(Error::InvalidArgument, "this thread is already recording a CUDA graph");
  if (!is_capturable(stream))
    return set_error(Error::NotSupported, "the default CUDA stream cannot be captured into a graph; record on "
                                          "another stream and replay there");
  t_failed_arena.reset();
  ScopedDevice scoped(device);
  KILN_RETURN_IF_ERROR(scoped.status());
  auto recording = std::make_unique<Recording>();
  recording->device = device;
  recording->stream = stream;
  recording->arena = std::make_unique<CaptureArena>(device);
  // Relaxed: the recorded work may allocate (cudaMalloc in the arena), and other
  // threads' unrelated CUDA calls must not invalidate this recording.
  KILN_RETURN_IF_ERROR(cuda_status(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed),
                                   "cudaStreamBeginCapture"));
  t_recording = recording.release();
  return Error::Ok;
}

Result<std::unique_ptr<CapturedGraph>> end_capture(int device, cudaStream_t stream,
                                                   std::vector<void*>* deferred_frees) {
  std::unique_ptr<Recording> recording(t_recording);
  if (!recording || recording->stream != stream)
    return set_error(Error::InvalidArgument, "end_capture without a matching begin_capture on this thread");
  t_recording = nullptr;
  deferred_frees->insert(deferred_frees->end(), recording->held_frees.begin(), recording->held_frees.end());
  ScopedDevice scoped(device);
  KILN_RETURN_IF_ERROR(scoped.status());

  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (ended != cudaSuccess || graph == nullptr) {
    if (graph) (void)cudaGraphDestroy(graph);
    t_failed_arena = std::move(recording->arena);
    return cuda_status(ended != cudaSuccess ? ended : cudaErrorStreamCaptureInvalidated,
                       "recording the CUDA graph (an operation that cannot be captured, such as a "
                       "synchronisation or a pageable host copy, ran during the recording)",
                       Error::NotSupported);
  }
  if (!recording->held_frees.empty() || recording->lost_free) {
    (void)cudaGraphDestroy(graph);
    t_failed_arena = std::move(recording->arena);
    return set_error(Error::NotSupported,
                     "recording the CUDA graph: the model freed " + std::to_string(recording->held_frees.size()) +
                         " buffer(s) allocated before the recording, which a replay would still use");
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);  // the executable graph is independent of it
  if (made != cudaSuccess) {
    t_failed_arena = std::move(recording->arena);
    return cuda_status(made, "cudaGraphInstantiate", Error::NotSupported);
  }
  auto captured = std::make_unique<CapturedGraph>();
  captured->device = device;
  captured->exec = exec;
  captured->arena = std::move(recording->arena);
  return captured;
}

CaptureArena* active_capture_arena() noexcept { return t_recording ? t_recording->arena.get() : nullptr; }

bool note_free_during_capture(void* ptr) noexcept {
  if (!t_recording) return false;
  try {
    t_recording->held_frees.push_back(ptr);
  } catch (...) {
    // Out of host memory: the buffer leaks rather than a replay reading freed
    // memory; the recording fails.
    t_recording->lost_free = true;
  }
  return true;
}

bool release_arena_block(void* ptr) noexcept {
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto it = registry().find(ptr);
  if (it == registry().end()) return false;
  return it->second->release(ptr);
}

}  // namespace kiln::cudadev
