// The calling thread's CUDA context as Kiln sees it: the current device and,
// per device, the current stream. This is the one place that state lives; the
// guard shims (aoti_torch_create_cuda_guard / _stream_guard), the allocator
// (stream-ordered allocation on the current stream) and the fallback ops (which
// launch on the current stream) all read and write it here.
//
// The current device is the CUDA runtime's own per-thread device
// (cudaGetDevice / cudaSetDevice), not a copy: model libraries call
// cudaSetDevice themselves (CreateWithDevice), and a cached copy would go
// stale. The current stream per device is Kiln's thread-local; null means the
// legacy default stream, which is also what a thread starts with.
//
// Thread-safety: everything here is per thread; nothing is shared.
#pragma once

#include <cuda_runtime_api.h>

#include "kiln/error.h"

namespace kiln::cudadev {

/// Devices whose current stream can be tracked (indices 0..kMaxDevices-1).
inline constexpr int kMaxDevices = 64;

/// The thread's current CUDA device (cudaGetDevice).
Result<int> current_device();

/// Makes `index` the thread's current CUDA device (cudaSetDevice); a no-op when
/// it already is. Errors name the index.
Error set_current_device(int index);

/// `index`, or the current device when `index` is -1; an error for any other
/// negative or too-large index.
Result<int> resolve_device(int index);

/// The thread's current stream on device `index` (null = legacy default
/// stream). `index` must be valid (see resolve_device).
cudaStream_t current_stream(int index) noexcept;

/// Sets the thread's current stream on device `index`; returns the previous one.
cudaStream_t exchange_current_stream(int index, cudaStream_t stream) noexcept;

/// Scoped "make `index` current, restore the previous device on exit" for
/// Kiln's own code (ops, allocator). `status()` is not Ok when the switch
/// failed; the destructor never throws and ignores restore failures.
class ScopedDevice {
 public:
  explicit ScopedDevice(int index);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  Error status() const noexcept { return status_; }

 private:
  int previous_ = -1;
  Error status_ = Error::Ok;
};

}  // namespace kiln::cudadev
