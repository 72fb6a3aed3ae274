// kiln_tensor_t: creation from caller memory, copies, empty tensors, accessors.
#include <span>
#include <string>
#include <vector>

#include "capi/capi_internal.h"
#include "kiln/device.h"
#include "kiln/dtype.h"

namespace {

using kiln::Error;

Error check_dtype(const char* fn, kiln_dtype_t dtype) {
  if (!kiln::is_known_dtype(dtype))
    return kiln::set_error(Error::InvalidArgument, std::string(fn) + ": unknown dtype code " + std::to_string(dtype));
  return Error::Ok;
}

Error check_device(const char* fn, kiln_device_type_t type, int32_t index) {
  if (type != KILN_DEVICE_CPU && type != KILN_DEVICE_CUDA)
    return kiln::set_error(Error::InvalidArgument, std::string(fn) + ": unknown device type code " +
                                                       std::to_string(type) + " (expected KILN_DEVICE_CPU or KILN_DEVICE_CUDA)");
  if (index < 0)
    return kiln::set_error(Error::InvalidArgument, std::string(fn) + ": negative device index " + std::to_string(index));
  return Error::Ok;
}

// Copies a (pointer, length) geometry array; NULL is allowed only for length 0.
Error copy_dims(const char* fn, const char* what, const int64_t* values, size_t ndim, std::vector<int64_t>& out) {
  if (ndim > 0 && values == nullptr)
    return kiln::set_error(Error::InvalidArgument, std::string(fn) + ": argument '" + what + "' is NULL but ndim is " +
                                                       std::to_string(ndim));
  out.assign(values, values + ndim);
  return Error::Ok;
}

// Deleter for memory adopted from the caller: runs the caller's callback once.
struct CallerDeleter {
  kiln_tensor_deleter_t deleter;
  void* context;
  void operator()(void* data) const { deleter(data, context); }
};

}  // namespace

extern "C" {

kiln_status_t kiln_tensor_create_from_data(void* data, kiln_dtype_t dtype, const int64_t* sizes,
                                           const int64_t* strides, size_t ndim, kiln_device_type_t device_type,
                                           int32_t device_index, kiln_tensor_deleter_t deleter,
                                           void* deleter_context, kiln_tensor_t** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(out);
    KILN_RETURN_IF_ERROR(check_dtype(fn, dtype));
    KILN_RETURN_IF_ERROR(check_device(fn, device_type, device_index));
    std::vector<int64_t> size_vec, stride_vec;
    KILN_RETURN_IF_ERROR(copy_dims(fn, "sizes", sizes, ndim, size_vec));
    if (strides) {
      stride_vec.assign(strides, strides + ndim);
    } else {
      stride_vec = kiln::contiguous_strides(size_vec);
    }
    // Allocate the handle first so that, once the storage adopts the memory,
    // nothing can fail and leave the caller unsure who owns it.
    auto handle = std::make_unique<kiln_tensor_t>();
    kiln::Storage::Deleter storage_deleter;
    if (deleter) storage_deleter = CallerDeleter{deleter, deleter_context};
    const kiln::Device device{static_cast<kiln::DeviceType>(device_type), device_index};
    KILN_ASSIGN_OR_RETURN(handle->tensor, kiln::Tensor::from_blob(data, size_vec, stride_vec,
                                                                  static_cast<kiln::DType>(dtype), device,
                                                                  std::move(storage_deleter)));
    *out = handle.release();
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_create_copy(const void* data, kiln_dtype_t dtype, const int64_t* sizes,
                                      const int64_t* strides, size_t ndim, kiln_tensor_t** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(out);
    KILN_RETURN_IF_ERROR(check_dtype(fn, dtype));
    std::vector<int64_t> size_vec, stride_vec;
    KILN_RETURN_IF_ERROR(copy_dims(fn, "sizes", sizes, ndim, size_vec));
    if (strides) {
      stride_vec.assign(strides, strides + ndim);
    } else {
      stride_vec = kiln::contiguous_strides(size_vec);
    }
    const auto kdtype = static_cast<kiln::DType>(dtype);
    // A borrowed view of the source validates its geometry (and a NULL
    // pointer for a non-empty tensor) before anything is allocated.
    KILN_ASSIGN_OR_RETURN(kiln::Tensor source,
                          kiln::Tensor::from_blob(const_cast<void*>(data), size_vec, stride_vec, kdtype));
    auto handle = std::make_unique<kiln_tensor_t>();
    KILN_ASSIGN_OR_RETURN(handle->tensor, kiln::Tensor::empty(size_vec, kdtype));
    if (source.numel() > 0) KILN_RETURN_IF_ERROR(kiln::copy_tensor(handle->tensor, source));
    *out = handle.release();
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_create_empty(kiln_dtype_t dtype, const int64_t* sizes, size_t ndim,
                                       kiln_device_type_t device_type, int32_t device_index,
                                       kiln_tensor_t** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(out);
    KILN_RETURN_IF_ERROR(check_dtype(fn, dtype));
    KILN_RETURN_IF_ERROR(check_device(fn, device_type, device_index));
    std::vector<int64_t> size_vec;
    KILN_RETURN_IF_ERROR(copy_dims(fn, "sizes", sizes, ndim, size_vec));
    auto handle = std::make_unique<kiln_tensor_t>();
    const kiln::Device device{static_cast<kiln::DeviceType>(device_type), device_index};
    KILN_ASSIGN_OR_RETURN(handle->tensor, kiln::Tensor::empty(size_vec, static_cast<kiln::DType>(dtype), device));
    *out = handle.release();
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_dtype(const kiln_tensor_t* tensor, kiln_dtype_t* out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(tensor);
    KILN_CAPI_REQUIRE(out);
    *out = static_cast<kiln_dtype_t>(tensor->tensor.dtype());
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_dim(const kiln_tensor_t* tensor, size_t* out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(tensor);
    KILN_CAPI_REQUIRE(out);
    *out = tensor->tensor.sizes().size();
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_sizes(const kiln_tensor_t* tensor, const int64_t** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(tensor);
    KILN_CAPI_REQUIRE(out);
    *out = tensor->tensor.sizes().empty() ? nullptr : tensor->tensor.sizes().data();
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_strides(const kiln_tensor_t* tensor, const int64_t** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(tensor);
    KILN_CAPI_REQUIRE(out);
    *out = tensor->tensor.strides().empty() ? nullptr : tensor->tensor.strides().data();
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_storage_offset(const kiln_tensor_t* tensor, int64_t* out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(tensor);
    KILN_CAPI_REQUIRE(out);
    *out = tensor->tensor.storage_offset();
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_data(const kiln_tensor_t* tensor, void** out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(tensor);
    KILN_CAPI_REQUIRE(out);
    *out = tensor->tensor.data_ptr();
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_device(const kiln_tensor_t* tensor, kiln_device_type_t* out_type,
                                 int32_t* out_index) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(tensor);
    const kiln::Device device = tensor->tensor.device();
    if (out_type) *out_type = static_cast<kiln_device_type_t>(device.type);
    if (out_index) *out_index = device.index;
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_numel(const kiln_tensor_t* tensor, int64_t* out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(tensor);
    KILN_CAPI_REQUIRE(out);
    *out = tensor->tensor.numel();
    return Error::Ok;
  });
}

kiln_status_t kiln_tensor_nbytes(const kiln_tensor_t* tensor, size_t* out) noexcept {
  return kiln::capi::guard(__func__, [&](const char* fn) -> Error {
    KILN_CAPI_REQUIRE(tensor);
    KILN_CAPI_REQUIRE(out);
    *out = tensor->tensor.nbytes();
    return Error::Ok;
  });
}

void kiln_tensor_free(kiln_tensor_t* tensor) noexcept { delete tensor; }

void kiln_tensor_array_free(kiln_tensor_t** tensors, size_t count) noexcept {
  if (!tensors) return;
  for (size_t i = 0; i < count; ++i) kiln_tensor_free(tensors[i]);
  delete[] tensors;
}

}  // extern "C"
