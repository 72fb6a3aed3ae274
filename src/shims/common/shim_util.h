// Helpers shared by every aoti_torch_* implementation (device-neutral shims and
// the per-device fallback ops): the exception/error firewall and argument
// checks that name the offending argument. Internal to libkiln.
#pragma once

#include <exception>
#include <new>
#include <span>
#include <string>
#include <utility>

#include "shims/common/shim_abi.h"
#include "shims/common/tensor_handle.h"
#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln::aoti {

/// Runs `body` (returning kiln::Error) and maps the outcome to the shim's 0/1.
/// Any failure (an Error, or an exception) leaves "<fn>: <detail>" as the
/// thread's error message. Never throws.
template <typename Body>
AOTITorchError guarded(const char* fn, Body&& body) noexcept {
  try {
    const Error err = body();
    if (err == Error::Ok) return KILN_AOTI_SUCCESS;
    const std::string detail = last_error_message();
    set_error(err, std::string(fn) + ": " + (detail.empty() ? to_string(err) : detail));
  } catch (const std::bad_alloc&) {
    try {
      set_error(Error::OutOfMemory, std::string(fn) + ": out of host memory");
    } catch (...) {
    }
  } catch (const std::exception& e) {
    try {
      set_error(Error::Internal, std::string(fn) + ": unexpected exception: " + e.what());
    } catch (...) {
    }
  } catch (...) {
    try {
      set_error(Error::Internal, std::string(fn) + ": unexpected non-standard exception");
    } catch (...) {
    }
  }
  return KILN_AOTI_FAILURE;
}

/// Records "<what>" as an InvalidArgument error and returns the code (the
/// function name is prefixed by guarded()).
inline Error invalid(std::string what) { return set_error(Error::InvalidArgument, std::move(what)); }

/// The defined tensor behind `handle`, or an error naming argument `name`.
inline Result<Tensor*> tensor_arg(AtenTensorHandle handle, const char* name) {
  Tensor* t = from_handle(handle);
  if (t == nullptr) return invalid(std::string("argument '") + name + "' is a null tensor handle");
  if (!t->defined()) return invalid(std::string("argument '") + name + "' is an undefined tensor");
  return t;
}

/// Checks an output pointer argument is non-null.
template <typename T>
inline Error out_arg(T* ptr, const char* name) {
  if (ptr == nullptr) return invalid(std::string("output argument '") + name + "' is null");
  return Error::Ok;
}

/// Validates an (ndim, pointer) int64 array argument and views it.
inline Result<std::span<const int64_t>> int_array_arg(const int64_t* ptr, int64_t len, const char* name) {
  if (len < 0) return invalid(std::string("argument '") + name + "' has negative length " + std::to_string(len));
  if (len > 0 && ptr == nullptr) return invalid(std::string("argument '") + name + "' is null");
  return std::span<const int64_t>(ptr, static_cast<size_t>(len));
}

/// A known dtype code, or an error naming it.
inline Result<DType> dtype_arg(int32_t code) {
  if (!is_known_dtype(code)) return invalid("unsupported dtype code " + std::to_string(code));
  return static_cast<DType>(code);
}

/// A device Kiln knows (CPU, CUDA, MPS), or an error naming the code.
inline Result<Device> device_arg(int32_t type, int32_t index) {
  if (type != static_cast<int32_t>(DeviceType::CPU) && type != static_cast<int32_t>(DeviceType::CUDA) &&
      type != static_cast<int32_t>(DeviceType::MPS))
    return invalid("unsupported device type code " + std::to_string(type));
  if (index < -1) return invalid("invalid device index " + std::to_string(index));
  // c10 uses -1 for "the current device"; Kiln's tensors hold a concrete index.
  return Device{static_cast<DeviceType>(type), type == 0 ? 0 : (index < 0 ? 0 : index)};
}

/// "[2, 3]" for messages.
inline std::string shape_string(std::span<const int64_t> sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

}  // namespace kiln::aoti
