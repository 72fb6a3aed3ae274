// Element types. The integer values are c10::ScalarType codes: the compiled model
// library passes them through the aoti_torch_* ABI, so they are pinned by
// static_asserts in src/core/dtype.cpp and must never be renumbered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kiln/export.h"

namespace kiln {

enum class DType : int32_t {
  UInt8 = 0,
  Int8 = 1,
  Int16 = 2,
  Int32 = 3,
  Int64 = 4,
  Float16 = 5,
  Float32 = 6,
  Float64 = 7,
  Complex64 = 9,    // c10::ComplexFloat: two float32 (real, imaginary)
  Complex128 = 10,  // c10::ComplexDouble: two float64
  Bool = 11,
  BFloat16 = 15,
  Float8_e5m2 = 23,
  Float8_e4m3fn = 24,
  UInt16 = 27,
  UInt32 = 28,
  UInt64 = 29,
};

/// Bytes per element, or 0 for a code Kiln does not know.
KILN_API size_t element_size(DType dtype) noexcept;

/// True if `code` is one of the DType values above.
KILN_API bool is_known_dtype(int32_t code) noexcept;

/// Lower-case name as PyTorch prints it without the "torch." prefix ("float32", "bfloat16").
KILN_API const char* dtype_name(DType dtype) noexcept;

/// Inverse of dtype_name; std::nullopt for an unknown name.
KILN_API std::optional<DType> dtype_from_name(std::string_view name) noexcept;

}  // namespace kiln
