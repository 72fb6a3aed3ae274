// Recording a stream's work into a CUDA graph, with the memory that work
// allocates while it is being recorded.
//
// Why a memory arena: a graph replays kernels with the addresses they had when
// they were recorded, so every buffer the recorded work allocates must stay
// reserved for the graph for as long as the graph lives. While a thread
// records, CudaDevice::allocate hands out memory from that recording's
// CaptureArena (plain cudaMalloc, allowed because capture runs in relaxed
// mode) instead of the stream-ordered pool; a block freed by the recorded work
// is reused by a later allocation of the same recording, which is safe because
// the recorded work is one chain of nodes on one stream.
//
// Ownership: a CapturedGraph owns its executable graph and its arena; the
// arena's blocks are freed when the graph is destroyed. Tensors that still
// point into them must be gone by then (the AOTInductor backend keeps the
// captured outputs and drops them first).
//
// Thread-safety: the recording state is per thread (a thread records at most
// one stream at a time); the registry of arena blocks is under a mutex.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kiln/error.h"

namespace kiln::cudadev {

class CaptureArena {
 public:
  explicit CaptureArena(int device) : device_(device) {}
  ~CaptureArena();
  CaptureArena(const CaptureArena&) = delete;
  CaptureArena& operator=(const CaptureArena&) = delete;

  /// A block of at least `nbytes` on the arena's device: a free block of the
  /// arena that fits (best fit) or a new cudaMalloc.
  Result<void*> allocate(size_t nbytes);
  /// Marks `ptr` free for later allocations of the same recording. False when
  /// `ptr` is not one of this arena's blocks.
  bool release(void* ptr) noexcept;

 private:
  struct Block {
    void* ptr;
    size_t nbytes;
    bool in_use;
  };
  int device_;
  std::vector<Block> blocks_;
};

/// What a finished recording became: the instantiated graph and its memory.
struct CapturedGraph {
  int device = 0;
  cudaGraphExec_t exec = nullptr;
  std::unique_ptr<CaptureArena> arena;
  ~CapturedGraph();
};

/// Whether `stream` can be recorded: not a default stream (legacy or
/// per-thread), which CUDA refuses to capture.
bool is_capturable(cudaStream_t stream) noexcept;

/// Starts recording `stream` (relaxed capture mode) on the calling thread.
/// `stream` must be capturable (is_capturable).
Error begin_capture(int device, cudaStream_t stream);

/// Ends the calling thread's recording of `stream`. On failure everything
/// recorded is dropped and the message says why. Either way, the pointers whose
/// frees were held back during the recording (see note_free_during_capture)
/// are appended to `deferred_frees` for the caller to free now.
Result<std::unique_ptr<CapturedGraph>> end_capture(int device, cudaStream_t stream,
                                                   std::vector<void*>* deferred_frees);

/// The arena of the calling thread's recording, or null when it is not
/// recording. For the allocator.
CaptureArena* active_capture_arena() noexcept;

/// Called by the allocator when the calling thread frees pool memory (allocated
/// before its recording started). While recording, the free is held back
/// until end_capture and the recording is failed, because the graph would use
/// freed memory at replay. Returns false (free it now) when not recording.
bool note_free_during_capture(void* ptr) noexcept;

/// Frees `ptr` if it is a block of a live arena (outside any recording). True
/// when it was one.
bool release_arena_block(void* ptr) noexcept;

}  // namespace kiln::cudadev
