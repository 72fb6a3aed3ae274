// The plugin's one entry point, kiln_cuda_plugin_api: the function table
// (cuda_plugin_api.h) libkiln's loader uses to open the CUDA device and to
// answer include/kiln/cuda.h.
#include <cuda_runtime_api.h>

#include <string>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/device/cuda_device.h"
#include "devices/cuda/loader/cuda_plugin_api.h"
#include "devices/cuda/device/cuda_thread_state.h"
#include "core/device_interface.h"
#include "kiln/log.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

// Runs `body` (returning kiln::Error) with nothing allowed to escape into libkiln.
template <typename Body>
int32_t firewall(const char* what, Body&& body) noexcept {
  try {
    return static_cast<int32_t>(body());
  } catch (...) {
    try {
      return static_cast<int32_t>(set_error(Error::Internal, std::string(what) + ": unexpected exception"));
    } catch (...) {
      return static_cast<int32_t>(Error::Internal);
    }
  }
}

int32_t api_device_count() { return CudaDevice::instance().device_count(); }

int32_t api_memory_stats(int32_t device, KilnCudaMemoryStats* out) {
  return firewall("kiln::cuda::memory_stats", [&]() -> Error {
    if (out == nullptr) return set_error(Error::InvalidArgument, "memory_stats: null output");
    KILN_ASSIGN_OR_RETURN(AllocatorStats s, CudaDevice::instance().stats(device));
    out->bytes_in_use = s.bytes_in_use;
    out->peak_bytes_in_use = s.peak_bytes_in_use;
    out->bytes_reserved = s.bytes_reserved;
    out->allocations_in_use = s.allocations_in_use;
    return Error::Ok;
  });
}

int32_t api_reset_peak(int32_t device) {
  return firewall("kiln::cuda::reset_peak_memory_stats", [&] { return CudaDevice::instance().reset_peak(device); });
}

int32_t api_release_cached(int32_t device) {
  return firewall("kiln::cuda::release_cached_memory", [&] { return CudaDevice::instance().release_cached(device); });
}

int32_t api_copy_strided(void* dst, const int64_t* dst_strides, const void* src, const int64_t* src_strides,
                         const int64_t* sizes, int64_t ndim, uint64_t element_size, int32_t device, void* stream) {
  return firewall("kiln::cuda::copy_strided", [&] {
    return CudaDevice::instance().copy_strided(dst, dst_strides, src, src_strides, sizes, ndim,
                                               static_cast<size_t>(element_size), device, stream);
  });
}

// Device indices of the stream calls must name a visible GPU (no -1 here: the
// public API takes explicit devices).
Error check_index(int32_t device) {
  const int count = CudaDevice::instance().device_count();
  if (device < 0 || device >= count || device >= kMaxDevices)
    return set_error(Error::InvalidArgument, "CUDA device index " + std::to_string(device) + " is out of range (" +
                                                 std::to_string(count) + " device(s) visible)");
  return Error::Ok;
}

int32_t api_compute_capability(int32_t device, int32_t* out) {
  return firewall("kiln::cuda::compute_capability", [&]() -> Error {
    if (out == nullptr) return set_error(Error::InvalidArgument, "compute_capability: null output");
    KILN_RETURN_IF_ERROR(check_index(device));
    KILN_ASSIGN_OR_RETURN(int cc, CudaDevice::instance().compute_capability(device));
    *out = cc;
    return Error::Ok;
  });
}

int32_t api_create_stream(int32_t device, void** out) {
  return firewall("kiln::cuda::create_stream", [&]() -> Error {
    if (out == nullptr) return set_error(Error::InvalidArgument, "create_stream: null output");
    KILN_RETURN_IF_ERROR(check_index(device));
    KILN_ASSIGN_OR_RETURN(*out, CudaDevice::instance().create_stream(device));
    return Error::Ok;
  });
}

int32_t api_destroy_stream(int32_t device, void* stream) {
  return firewall("kiln::cuda::destroy_stream", [&]() -> Error {
    KILN_RETURN_IF_ERROR(check_index(device));
    CudaDevice::instance().destroy_stream(device, stream);
    return Error::Ok;
  });
}

int32_t api_current_stream(int32_t device, void** out) {
  return firewall("kiln::cuda::current_stream", [&]() -> Error {
    if (out == nullptr) return set_error(Error::InvalidArgument, "current_stream: null output");
    KILN_RETURN_IF_ERROR(check_index(device));
    *out = cudadev::current_stream(device);
    return Error::Ok;
  });
}

int32_t api_set_current_stream(int32_t device, void* stream, void** previous) {
  return firewall("kiln::cuda::set_current_stream", [&]() -> Error {
    KILN_RETURN_IF_ERROR(check_index(device));
    void* before = exchange_current_stream(device, static_cast<cudaStream_t>(stream));
    if (previous != nullptr) *previous = before;
    return Error::Ok;
  });
}

int32_t api_open(void** device) {
  return firewall("kiln_cuda_plugin_api()->open", [&]() -> Error {
    if (device == nullptr) return set_error(Error::InvalidArgument, "open: null output");
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess)
      return cuda_status(status, "no usable CUDA device (cudaGetDeviceCount)", Error::NotSupported);
    if (count <= 0) return set_error(Error::NotSupported, "no CUDA device is visible");
    int driver = 0;
    int runtime = 0;
    (void)cudaDriverGetVersion(&driver);
    (void)cudaRuntimeGetVersion(&runtime);
    *device = static_cast<DeviceInterface*>(&CudaDevice::instance());
    KILN_LOG(Info, "CUDA device opened: " + std::to_string(count) + " GPU(s), driver " + std::to_string(driver) +
                       ", runtime " + std::to_string(runtime));
    return Error::Ok;
  });
}

const KilnCudaPluginApi kApi = {
    KILN_CUDA_PLUGIN_API_VERSION,
    sizeof(KilnCudaPluginApi),
    api_open,
    api_device_count,
    api_memory_stats,
    api_reset_peak,
    api_release_cached,
    api_copy_strided,
    api_compute_capability,
    api_create_stream,
    api_destroy_stream,
    api_current_stream,
    api_set_current_stream,
};

}  // namespace

extern "C" {

__attribute__((visibility("default"))) const KilnCudaPluginApi* kiln_cuda_plugin_api(void) { return &kApi; }

}  // extern "C"
