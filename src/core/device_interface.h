// The small interface every device (CPU, CUDA, later Metal) implements:
// memory, copies, streams, synchronisation. Private to Kiln and its device
// plugins, which are built from the same tree (not a user API). The CPU device
// is core's (cpu_device.h); the CUDA plugin's implementation is loaded by a
// Runtime on first use and published to the process (device_table.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "kiln/device.h"
#include "kiln/error.h"
#include "kiln/export.h"

namespace kiln {

/// Opaque device stream (cudaStream_t on CUDA; null = the device's default).
using StreamHandle = void*;
/// Opaque captured work graph (a Kiln-owned cudaGraphExec_t plus the memory
/// its nodes use, on CUDA).
using GraphHandle = void*;

enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice, HostToHost };

/// Fills `out` with the bytes of an upload's source from `offset`: the
/// program file itself, for weights uploaded without a private host copy
/// (ProgramFile::read_named_range). Called by several upload threads at once.
using UploadReader = std::function<Error(uint64_t offset, std::span<uint8_t> out)>;

/// One region of a bulk host-to-device upload (weights at load time): from
/// host memory `src`, or, when `src` is null, from `reader` at `src_offset`.
struct UploadRegion {
  void* dst;        // device memory from allocate()
  const void* src;  // host memory, or null
  size_t nbytes;
  const UploadReader* reader = nullptr;  // borrowed; lives until upload() returns
  uint64_t src_offset = 0;
};

class KILN_API DeviceInterface {
 public:
  virtual ~DeviceInterface() = default;

  virtual DeviceType type() const noexcept = 0;
  /// Number of devices of this type visible to the process (0 if none).
  virtual int device_count() const noexcept = 0;

  /// Allocates `nbytes` (>= 64-byte aligned) on device `index`, stream-ordered
  /// on `stream` where the device has streams. Error::OutOfMemory on failure.
  virtual Result<void*> allocate(size_t nbytes, int index, StreamHandle stream) = 0;
  /// Frees memory from allocate(). Null is a no-op.
  virtual void free(void* ptr, int index, StreamHandle stream) noexcept = 0;

  /// Copies `nbytes` of contiguous memory; ordered on `stream`.
  virtual Error copy(void* dst, const void* src, size_t nbytes, CopyKind kind, int index,
                     StreamHandle stream) = 0;
  /// Waits for all work queued on `stream`.
  virtual Error synchronize(int index, StreamHandle stream) = 0;

  /// Copies a strided tensor (`ndim` <= 8 dimensions of `sizes`, strides in
  /// elements, src strides may be 0 for broadcast) between two buffers of
  /// this device, ordered on `stream`. Devices without a strided copy kernel
  /// keep the default, which returns NotSupported.
  virtual Error copy_strided(void* dst, const int64_t* dst_strides, const void* src, const int64_t* src_strides,
                             const int64_t* sizes, int64_t ndim, size_t element_size, int index,
                             StreamHandle stream);

  // ---- added for per-method streams and GPU checks; defaults suit devices
  // ---- without streams (CPU), so implementations need not override them.

  /// Creates a new stream on device `index`. The caller owns it and must
  /// destroy it with destroy_stream() (after its work is done or synchronised).
  /// Devices without streams return nullptr, the device's only stream.
  /// Thread-safe.
  virtual Result<StreamHandle> create_stream(int index) {
    (void)index;
    return StreamHandle{nullptr};
  }
  /// Destroys a stream from create_stream(); null is a no-op. Work already
  /// queued on it still completes. Thread-safe.
  virtual void destroy_stream(int index, StreamHandle stream) noexcept {
    (void)index;
    (void)stream;
  }
  /// The calling thread's current stream on device `index` (what a null
  /// StreamHandle means in the calls above; null = the default stream).
  virtual StreamHandle current_stream(int index) noexcept {
    (void)index;
    return nullptr;
  }
  /// The compute capability of device `index` as 10 * major + minor (90 for
  /// an H100). NotSupported for devices that have none (CPU). Thread-safe.
  virtual Result<int> compute_capability(int index) {
    (void)index;
    return set_error(Error::NotSupported, "this device type has no compute capability");
  }

  /// Copies every region from the host to device `index` and waits until all
  /// are done. Devices may overlap the copies (CUDA: pinned staging buffers
  /// filled by several threads while earlier chunks are in flight); the
  /// default copies the regions one by one with copy().
  virtual Error upload(std::span<const UploadRegion> regions, int index);
  /// A hint that upload() of about `nbytes` follows soon (a method's weights,
  /// before its library loads): a device may get ready meanwhile (CUDA pins
  /// its staging buffers on a background thread). The default does nothing.
  virtual void prepare_upload(size_t nbytes, int index) noexcept {
    (void)nbytes;
    (void)index;
  }
  /// Memory (>= 64-byte aligned) that lives until it is freed at unload, such
  /// as a weights arena: not stream-ordered (ready for any stream when this
  /// returns) and freed with free(). The default is allocate() on the current
  /// stream, then a synchronisation; CUDA takes it from the driver directly,
  /// since growing its caching pool by gigabytes costs ~10 ms per GiB while
  /// cudaMalloc costs well under 1 ms.
  virtual Result<void*> allocate_long_lived(size_t nbytes, int index);

  // ---- graph capture (CUDA graphs); defaults refuse with NotSupported.

  /// Starts recording the work the calling thread queues on `stream` instead
  /// of running it. While recording, allocate() on this thread and stream
  /// returns memory owned by the graph being recorded (it lives until
  /// destroy_graph), so the recorded kernels find the same buffers at every
  /// replay. `stream` must be a stream from create_stream (not the default).
  virtual Error begin_capture(int index, StreamHandle stream);
  /// Ends the recording started by begin_capture on `stream` and returns the
  /// replayable graph. Fails (and frees everything recorded) when the work
  /// could not be captured; the message says why (an operation that is not
  /// allowed while capturing, such as a synchronisation or a host copy).
  virtual Result<GraphHandle> end_capture(int index, StreamHandle stream);
  /// Whether begin_capture accepts `stream` (null: the calling thread's
  /// current stream). CUDA's default streams cannot be recorded, but a graph
  /// recorded on another stream may be replayed on them.
  virtual bool stream_capturable(int index, StreamHandle stream) noexcept {
    (void)index;
    (void)stream;
    return false;
  }
  /// Queues one replay of `graph` on `stream`.
  virtual Error launch_graph(int index, GraphHandle graph, StreamHandle stream);
  /// Frees `graph` and its memory once queued replays are done (synchronises
  /// the device). Null is a no-op.
  virtual void destroy_graph(int index, GraphHandle graph) noexcept;

  /// Releases what the model library loaded at `library_base` acquired from
  /// the device and never gives back itself (CUDA: the kernel modules its
  /// wrapper loads). Called when a method is unloaded, after its model
  /// containers and graphs are gone and before the library is closed.
  virtual void release_library_kernels(int index, const void* library_base) noexcept {
    (void)index;
    (void)library_base;
  }
};

}  // namespace kiln
