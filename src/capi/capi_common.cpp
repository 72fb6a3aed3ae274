// Library information, error reporting and dtype helpers of the C API, plus
// the firewall's exception handling. Pins every ABI integer to its C++ twin.
#include <string>
#include <type_traits>

#include "capi/capi_internal.h"
#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/version.h"

namespace {

// Status codes are the C++ Error values.
static_assert(KILN_OK == static_cast<int32_t>(kiln::Error::Ok));
static_assert(KILN_ERROR_INTERNAL == static_cast<int32_t>(kiln::Error::Internal));
static_assert(KILN_ERROR_INVALID_ARGUMENT == static_cast<int32_t>(kiln::Error::InvalidArgument));
static_assert(KILN_ERROR_INVALID_PROGRAM == static_cast<int32_t>(kiln::Error::InvalidProgram));
static_assert(KILN_ERROR_NOT_FOUND == static_cast<int32_t>(kiln::Error::NotFound));
static_assert(KILN_ERROR_NOT_SUPPORTED == static_cast<int32_t>(kiln::Error::NotSupported));
static_assert(KILN_ERROR_OUT_OF_MEMORY == static_cast<int32_t>(kiln::Error::OutOfMemory));
static_assert(KILN_ERROR_IO_ERROR == static_cast<int32_t>(kiln::Error::IoError));
static_assert(KILN_ERROR_BACKEND_FAILED == static_cast<int32_t>(kiln::Error::BackendFailed));
static_assert(KILN_ERROR_INVALID_STATE == static_cast<int32_t>(kiln::Error::InvalidState));
static_assert(KILN_ERROR_MISSING_SHIM == static_cast<int32_t>(kiln::Error::MissingShim));
static_assert(KILN_ERROR_INTEGRITY_ERROR == static_cast<int32_t>(kiln::Error::IntegrityError));
static_assert(std::is_same_v<kiln_status_t, std::underlying_type_t<kiln::Error>>);

// dtype codes are the C++ DType values (themselves c10::ScalarType codes).
static_assert(KILN_DTYPE_UINT8 == static_cast<int32_t>(kiln::DType::UInt8));
static_assert(KILN_DTYPE_INT8 == static_cast<int32_t>(kiln::DType::Int8));
static_assert(KILN_DTYPE_INT16 == static_cast<int32_t>(kiln::DType::Int16));
static_assert(KILN_DTYPE_INT32 == static_cast<int32_t>(kiln::DType::Int32));
static_assert(KILN_DTYPE_INT64 == static_cast<int32_t>(kiln::DType::Int64));
static_assert(KILN_DTYPE_FLOAT16 == static_cast<int32_t>(kiln::DType::Float16));
static_assert(KILN_DTYPE_FLOAT32 == static_cast<int32_t>(kiln::DType::Float32));
static_assert(KILN_DTYPE_FLOAT64 == static_cast<int32_t>(kiln::DType::Float64));
static_assert(KILN_DTYPE_BOOL == static_cast<int32_t>(kiln::DType::Bool));
static_assert(KILN_DTYPE_BFLOAT16 == static_cast<int32_t>(kiln::DType::BFloat16));
static_assert(KILN_DTYPE_FLOAT8_E5M2 == static_cast<int32_t>(kiln::DType::Float8_e5m2));
static_assert(KILN_DTYPE_FLOAT8_E4M3FN == static_cast<int32_t>(kiln::DType::Float8_e4m3fn));
static_assert(KILN_DTYPE_UINT16 == static_cast<int32_t>(kiln::DType::UInt16));
static_assert(KILN_DTYPE_UINT32 == static_cast<int32_t>(kiln::DType::UInt32));
static_assert(KILN_DTYPE_UINT64 == static_cast<int32_t>(kiln::DType::UInt64));

static_assert(KILN_DEVICE_CPU == static_cast<int32_t>(kiln::DeviceType::CPU));
static_assert(KILN_DEVICE_CUDA == static_cast<int32_t>(kiln::DeviceType::CUDA));

// Message used when even formatting a message fails; short enough for the
// small-string buffer, so assigning it does not allocate.
constexpr const char kOutOfMemoryMessage[] = "out of memory";

void record_failure(const char* fn, const char* what, kiln::Error code) noexcept {
  try {
    kiln::set_error(code, std::string(fn) + ": " + what);
  } catch (...) {
    try {
      kiln::set_error(code, kOutOfMemoryMessage);
    } catch (...) {
      // Nothing more can be recorded; the status code still tells the story.
    }
  }
}

}  // namespace

namespace kiln::capi {

Error null_argument(const char* fn, const char* arg) {
  return set_error(Error::InvalidArgument, std::string(fn) + ": argument '" + arg + "' must not be NULL");
}

kiln_status_t exception_to_status(const char* fn, std::exception_ptr error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const std::bad_alloc&) {
    record_failure(fn, "out of memory", Error::OutOfMemory);
    return KILN_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    record_failure(fn, (std::string("internal error: ") + e.what()).c_str(), Error::Internal);
  } catch (...) {
    record_failure(fn, "internal error: unknown exception", Error::Internal);
  }
  return KILN_ERROR_INTERNAL;
}

}  // namespace kiln::capi

extern "C" {

uint32_t kiln_abi_version(void) noexcept { return KILN_ABI_VERSION; }

const char* kiln_version_string(void) noexcept { return KILN_VERSION_STRING; }

const char* kiln_status_name(kiln_status_t status) noexcept {
  if (status < KILN_OK || status > KILN_ERROR_INTEGRITY_ERROR) return "Unknown";
  return kiln::to_string(static_cast<kiln::Error>(status));
}

const char* kiln_last_error_message(void) noexcept { return kiln::last_error_message().c_str(); }

const char* kiln_dtype_name(kiln_dtype_t dtype) noexcept {
  if (!kiln::is_known_dtype(dtype)) return nullptr;
  return kiln::dtype_name(static_cast<kiln::DType>(dtype));
}

size_t kiln_dtype_element_size(kiln_dtype_t dtype) noexcept {
  if (!kiln::is_known_dtype(dtype)) return 0;
  return kiln::element_size(static_cast<kiln::DType>(dtype));
}

}  // extern "C"
