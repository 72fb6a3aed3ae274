#include "float_convert.h"

#include <bit>
#include <cmath>

namespace kiln::tools {

float half_to_float(uint16_t bits) noexcept {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa units of 2^-24, exactly representable in float32.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  // Rebias the exponent from 15 to 127.
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t float_to_half(float value) noexcept {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN, kept quiet
  // 65520 (0x477ff000) is the midpoint between 65504 (largest half) and 2^16;
  // ties go to even, and 65504's mantissa is odd, so the midpoint rounds up to inf.
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  if (exponent >= -14) {
    const uint32_t mantissa = magnitude & 0x7fffffu;
    uint32_t half = (static_cast<uint32_t>(exponent + 15) << 10) | (mantissa >> 13);
    const uint32_t rest = mantissa & 0x1fffu;
    // A carry out of the mantissa correctly bumps the exponent.
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Subnormal half: count units of 2^-24. Scaling by a power of two is exact and
  // nearbyint rounds ties to even in the default rounding mode. A result of
  // 0x400 is the smallest normal half, which is also the right encoding.
  const float units = std::nearbyint(std::bit_cast<float>(magnitude) * 16777216.0f);
  return static_cast<uint16_t>(sign | static_cast<uint16_t>(units));
}

float bfloat16_to_float(uint16_t bits) noexcept {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

uint16_t float_to_bfloat16(float value) noexcept {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float float8_e4m3fn_to_float(uint8_t bits) noexcept {
  const bool negative = (bits & 0x80u) != 0;
  const uint32_t exponent = (bits >> 3) & 0xfu;
  const uint32_t mantissa = bits & 0x7u;
  float magnitude;
  if (exponent == 0xf && mantissa == 0x7) {
    magnitude = std::nanf("");
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -9);  // subnormal: units of 2^-9
  } else {
    magnitude = std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, static_cast<int>(exponent) - 7);
  }
  return negative ? -magnitude : magnitude;
}

float float8_e5m2_to_float(uint8_t bits) noexcept {
  return half_to_float(static_cast<uint16_t>(static_cast<uint16_t>(bits) << 8));
}

}  // namespace kiln::tools
