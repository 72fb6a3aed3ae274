// Conversions between float32 and the narrow floating-point formats a model
// may produce or consume (float16, bfloat16, float8). The CLI needs them to
// make random inputs of those types and to write outputs numpy can read.
//
// Pure functions on values: no state, thread-safe. float32 -> narrow rounds to
// nearest, ties to even, like torch's own casts.
#pragma once

#include <cstdint>

namespace kiln::tools {

/// IEEE binary16 bits -> float32 (exact).
float half_to_float(uint16_t bits) noexcept;
/// float32 -> IEEE binary16 bits; overflow gives infinity, NaN stays NaN.
uint16_t float_to_half(float value) noexcept;

/// bfloat16 bits -> float32 (exact: bfloat16 is the top half of a float32).
float bfloat16_to_float(uint16_t bits) noexcept;
/// float32 -> bfloat16 bits; NaN stays NaN (quiet).
uint16_t float_to_bfloat16(float value) noexcept;

/// float8 e4m3fn (no infinities; 0x7f/0xff are NaN) -> float32 (exact).
float float8_e4m3fn_to_float(uint8_t bits) noexcept;
/// float8 e5m2 (binary16 with the low 8 mantissa bits dropped) -> float32 (exact).
float float8_e5m2_to_float(uint8_t bits) noexcept;

}  // namespace kiln::tools
