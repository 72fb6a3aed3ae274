// The small interface every device backend (CPU, CUDA, later Metal)
// implements: memory, copies, streams, synchronisation. Implementations live in
// src/devices/<name>/ and are registered from one explicit list
// (src/devices/builtin_devices.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kiln/device.h"
#include "kiln/error.h"
#include "kiln/export.h"

namespace kiln {

/// Opaque device stream (cudaStream_t on CUDA; null = the device's default).
using StreamHandle = void*;

enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice, HostToHost };

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
};

/// Registers `device` for its type (called from the builtin list). The registry
/// does not own it: registered interfaces are static objects.
KILN_API void register_device_interface(DeviceInterface* device);

/// The interface for `type`, or nullptr when this build/machine has none.
/// Registers the builtin devices on first use.
KILN_API DeviceInterface* get_device_interface(DeviceType type);

/// Defined in src/devices/builtin_devices.cpp: registers every device compiled
/// into this build. The one explicit list of devices.
void register_builtin_devices();

}  // namespace kiln
