// Code getters: the model library caches these c10 enum values at load time.
// Kiln's DType/DeviceType values are the c10 codes (pinned in src/core), so the
// getters return them directly; the static_asserts pin the ones used here.
#include "shims/common/shim_abi.h"
#include "kiln/device.h"
#include "kiln/dtype.h"

namespace {
constexpr int32_t code(kiln::DType d) { return static_cast<int32_t>(d); }
constexpr int32_t code(kiln::DeviceType d) { return static_cast<int32_t>(d); }
static_assert(code(kiln::DType::Float32) == 6 && code(kiln::DType::BFloat16) == 15 &&
              code(kiln::DType::Float8_e4m3fn) == 24 && code(kiln::DType::UInt64) == 29);
static_assert(code(kiln::DeviceType::CPU) == 0 && code(kiln::DeviceType::CUDA) == 1 &&
              code(kiln::DeviceType::MPS) == 13);

// c10::Layout::Strided and c10::MemoryFormat values.
constexpr int32_t kLayoutStrided = 0;
constexpr int32_t kMemoryFormatContiguous = 0;
constexpr int32_t kMemoryFormatPreserve = 1;
constexpr int32_t kMemoryFormatChannelsLast = 2;
constexpr int32_t kMemoryFormatChannelsLast3d = 3;

// TORCH_ABI_VERSION layout: major << 56 | minor << 48 | patch << 40 | abi tag.
// Kiln implements the 2.11 shim surface.
constexpr uint64_t kAbiVersion = (2ull << 56) | (11ull << 48);
}  // namespace

extern "C" {

KILN_SHIM_EXPORT uint64_t aoti_torch_abi_version() { return kAbiVersion; }

KILN_SHIM_EXPORT int32_t aoti_torch_device_type_cpu() { return code(kiln::DeviceType::CPU); }
KILN_SHIM_EXPORT int32_t aoti_torch_device_type_cuda() { return code(kiln::DeviceType::CUDA); }
KILN_SHIM_EXPORT int32_t aoti_torch_device_type_mps() { return code(kiln::DeviceType::MPS); }

KILN_SHIM_EXPORT int32_t aoti_torch_dtype_float8_e5m2() { return code(kiln::DType::Float8_e5m2); }
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_float8_e4m3fn() { return code(kiln::DType::Float8_e4m3fn); }
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_bfloat16() { return code(kiln::DType::BFloat16); }
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_float16() { return code(kiln::DType::Float16); }
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_float32() { return code(kiln::DType::Float32); }
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_float64() { return code(kiln::DType::Float64); }
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_complex64() { return code(kiln::DType::Complex64); }
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_complex128() { return code(kiln::DType::Complex128); }
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_uint8() { return code(kiln::DType::UInt8); }
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_uint16() { return code(kiln::DType::UInt16); }
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_uint32() { return code(kiln::DType::UInt32); }
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_uint64() { return code(kiln::DType::UInt64); }
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_int8() { return code(kiln::DType::Int8); }
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_int16() { return code(kiln::DType::Int16); }
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_int32() { return code(kiln::DType::Int32); }
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_int64() { return code(kiln::DType::Int64); }
KILN_SHIM_EXPORT int32_t aoti_torch_dtype_bool() { return code(kiln::DType::Bool); }

KILN_SHIM_EXPORT size_t aoti_torch_dtype_element_size(int32_t dtype) {
  return kiln::is_known_dtype(dtype) ? kiln::element_size(static_cast<kiln::DType>(dtype)) : 0;
}

KILN_SHIM_EXPORT int32_t aoti_torch_layout_strided() { return kLayoutStrided; }
KILN_SHIM_EXPORT int32_t aoti_torch_memory_format_contiguous_format() { return kMemoryFormatContiguous; }
KILN_SHIM_EXPORT int32_t aoti_torch_memory_format_channels_last() { return kMemoryFormatChannelsLast; }
KILN_SHIM_EXPORT int32_t aoti_torch_memory_format_channels_last_3d() { return kMemoryFormatChannelsLast3d; }
KILN_SHIM_EXPORT int32_t aoti_torch_memory_format_preserve_format() { return kMemoryFormatPreserve; }

}  // extern "C"
