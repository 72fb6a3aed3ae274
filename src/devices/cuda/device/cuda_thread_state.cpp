#include "devices/cuda/device/cuda_thread_state.h"

#include <array>
#include <string>

#include "devices/cuda/cuda_check.h"

namespace kiln::cudadev {
namespace {

// Per-thread current streams, indexed by device. Zero-initialised: every
// device starts on the legacy default stream.
std::array<cudaStream_t, kMaxDevices>& thread_streams() noexcept {
  thread_local std::array<cudaStream_t, kMaxDevices> streams{};
  return streams;
}

}  // namespace

Result<int> current_device() {
  int device = 0;
  KILN_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  return device;
}

Error set_current_device(int index) {
  int count = 0;
  KILN_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count));
  if (index < 0 || index >= count || index >= kMaxDevices)
    return set_error(Error::InvalidArgument, "CUDA device index " + std::to_string(index) + " is out of range (" +
                                                 std::to_string(count) + " device(s) visible)");
  int now = -1;
  KILN_CUDA_RETURN_IF_ERROR(cudaGetDevice(&now));
  if (now == index) return Error::Ok;
  return cuda_status(cudaSetDevice(index), "cudaSetDevice(" + std::to_string(index) + ")");
}

Result<int> resolve_device(int index) {
  if (index == -1) return current_device();
  if (index < 0 || index >= kMaxDevices)
    return set_error(Error::InvalidArgument, "CUDA device index " + std::to_string(index) + " is out of range");
  return index;
}

cudaStream_t current_stream(int index) noexcept {
  if (index < 0 || index >= kMaxDevices) return nullptr;
  return thread_streams()[static_cast<size_t>(index)];
}

cudaStream_t exchange_current_stream(int index, cudaStream_t stream) noexcept {
  if (index < 0 || index >= kMaxDevices) return nullptr;
  cudaStream_t& slot = thread_streams()[static_cast<size_t>(index)];
  cudaStream_t previous = slot;
  slot = stream;
  return previous;
}

ScopedDevice::ScopedDevice(int index) {
  const cudaError_t got = cudaGetDevice(&previous_);
  if (got != cudaSuccess) {
    previous_ = -1;
    status_ = cuda_status(got, "cudaGetDevice");
    return;
  }
  if (previous_ != index) status_ = set_current_device(index);
}

ScopedDevice::~ScopedDevice() {
  int now = -1;
  if (previous_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous_) (void)cudaSetDevice(previous_);
}

}  // namespace kiln::cudadev
