// Device/stream guards, the current-stream query and raw caching-allocator
// memory: the CUDA shims that only touch the thread state and the allocator.
#include <new>
#include <string>

#include "shims/common/shim_util.h"
#include "devices/cuda/device/cuda_device.h"
#include "shims/cuda/cuda_shims.h"
#include "devices/cuda/device/cuda_thread_state.h"

using namespace kiln;
using namespace kiln::cudadev;

namespace {

struct DeviceGuard {
  int original_device;
};

struct StreamGuard {
  int original_device;
  int device;
  cudaStream_t previous_stream;
};

template <typename T>
Error non_null(T* p, const char* name) {
  if (p == nullptr) return set_error(Error::InvalidArgument, std::string("argument '") + name + "' is null");
  return Error::Ok;
}

}  // namespace

extern "C" {

KILN_SHIM_EXPORT AOTITorchError aoti_torch_create_cuda_guard(int32_t device_index, CUDAGuardHandle* ret_guard) {
  return aoti::guarded("aoti_torch_create_cuda_guard", [&]() -> Error {
    KILN_RETURN_IF_ERROR(non_null(ret_guard, "ret_guard"));
    KILN_ASSIGN_OR_RETURN(int original, current_device());
    KILN_ASSIGN_OR_RETURN(int device, resolve_device(device_index));
    KILN_RETURN_IF_ERROR(set_current_device(device));
    *ret_guard = reinterpret_cast<CUDAGuardHandle>(new DeviceGuard{original});
    return Error::Ok;
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_delete_cuda_guard(CUDAGuardHandle guard) {
  return aoti::guarded("aoti_torch_delete_cuda_guard", [&]() -> Error {
    if (guard == nullptr) return Error::Ok;
    auto* g = reinterpret_cast<DeviceGuard*>(guard);
    const int original = g->original_device;
    delete g;
    return set_current_device(original);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_guard_set_index(CUDAGuardHandle guard, int32_t device_index) {
  return aoti::guarded("aoti_torch_cuda_guard_set_index", [&]() -> Error {
    KILN_RETURN_IF_ERROR(non_null(guard, "guard"));
    KILN_ASSIGN_OR_RETURN(int device, resolve_device(device_index));
    return set_current_device(device);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_create_cuda_stream_guard(void* stream, int32_t device_index,
                                                                    CUDAStreamGuardHandle* ret_guard) {
  return aoti::guarded("aoti_torch_create_cuda_stream_guard", [&]() -> Error {
    KILN_RETURN_IF_ERROR(non_null(ret_guard, "ret_guard"));
    KILN_ASSIGN_OR_RETURN(int original, current_device());
    KILN_ASSIGN_OR_RETURN(int device, resolve_device(device_index));
    KILN_RETURN_IF_ERROR(set_current_device(device));
    auto* g = new StreamGuard{original, device, nullptr};
    g->previous_stream = exchange_current_stream(device, static_cast<cudaStream_t>(stream));
    *ret_guard = reinterpret_cast<CUDAStreamGuardHandle>(g);
    return Error::Ok;
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardHandle guard) {
  return aoti::guarded("aoti_torch_delete_cuda_stream_guard", [&]() -> Error {
    if (guard == nullptr) return Error::Ok;
    auto* g = reinterpret_cast<StreamGuard*>(guard);
    (void)exchange_current_stream(g->device, g->previous_stream);
    const int original = g->original_device;
    delete g;
    return set_current_device(original);
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret_stream) {
  return aoti::guarded("aoti_torch_get_current_cuda_stream", [&]() -> Error {
    KILN_RETURN_IF_ERROR(non_null(ret_stream, "ret_stream"));
    KILN_ASSIGN_OR_RETURN(int device, resolve_device(device_index));
    *ret_stream = current_stream(device);
    return Error::Ok;
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_caching_allocator_raw_alloc(uint64_t nbytes, void** ret_ptr) {
  return aoti::guarded("aoti_torch_cuda_caching_allocator_raw_alloc", [&]() -> Error {
    KILN_RETURN_IF_ERROR(non_null(ret_ptr, "ret_ptr"));
    KILN_ASSIGN_OR_RETURN(int device, current_device());
    KILN_ASSIGN_OR_RETURN(void* p, CudaDevice::instance().allocate(nbytes > 0 ? nbytes : 1, device, nullptr));
    *ret_ptr = p;
    return Error::Ok;
  });
}

KILN_SHIM_EXPORT AOTITorchError aoti_torch_cuda_caching_allocator_raw_delete(void* ptr) {
  return aoti::guarded("aoti_torch_cuda_caching_allocator_raw_delete", [&]() -> Error {
    CudaDevice::instance().free(ptr, -1, nullptr);
    return Error::Ok;
  });
}

}  // extern "C"
