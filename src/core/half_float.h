// Conversions between float32 and the narrow floating-point formats a model
// may produce or consume, on raw bit patterns: bfloat16 and float16 both ways,
// float8 (e4m3fn, e5m2) both ways. Header-only and dependency-free so any
// layer can use it (the shims' dtype conversions, the CPU fallback ops, the
// CLI's random inputs and .npy outputs). Round-to-nearest-even on narrowing,
// like torch's casts; NaN stays NaN; float16 overflow becomes infinity;
// subnormals are exact.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kiln {

inline uint32_t float_bits(float f) noexcept {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(uint32_t u) noexcept {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline float bf16_to_float(uint16_t h) noexcept { return bits_float(static_cast<uint32_t>(h) << 16); }

inline uint16_t float_to_bf16(float f) noexcept {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  // Round to nearest even on the 16 dropped bits.
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float half_to_float(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    // Subnormal: value = mant * 2^-24, exactly representable in float.
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t float_to_half(float f) noexcept {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero) in half: scale to units of 2^-24 and round to nearest even.
    const float a = bits_float(abs);
    const float scaled = a * 16777216.0f;  // exact (power of two)
    auto q = static_cast<uint32_t>(scaled);
    const float rem = scaled - static_cast<float>(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  // Normal: rebias exponent (127 -> 15) and round the 13 dropped mantissa bits to nearest even.
  uint32_t r = abs - (112u << 23);
  r += 0xfffu + ((r >> 13) & 1u);
  return static_cast<uint16_t>(sign | (r >> 13));
}

/// float8 e4m3fn (no infinities; 0x7f/0xff are NaN) -> float32 (exact).
inline float float8_e4m3fn_to_float(uint8_t bits) noexcept {
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

/// float8 e5m2 (binary16 with the low 8 mantissa bits dropped) -> float32 (exact).
inline float float8_e5m2_to_float(uint8_t bits) noexcept {
  return half_to_float(static_cast<uint16_t>(static_cast<uint16_t>(bits) << 8));
}

namespace detail {

// |f| (finite, >= 0) as a float8 code with `mantissa_bits` stored mantissa
// bits and exponent bias `bias`, rounded to nearest even; subnormals below
// 2^(1 - bias). Codes are monotonic in the value, so a mantissa that rounds up
// to the next power of two carries into the exponent by plain addition. The
// caller maps codes past the format's largest finite value.
inline uint32_t float8_magnitude_code(float a, int mantissa_bits, int bias) noexcept {
  const float steps = static_cast<float>(1 << mantissa_bits);
  const int min_exponent = 1 - bias;
  if (a < std::ldexp(1.0f, min_exponent)) {
    // Subnormal: units of 2^(min_exponent - mantissa_bits); nearbyint rounds half to even.
    return static_cast<uint32_t>(std::nearbyint(std::ldexp(a, mantissa_bits - min_exponent)));
  }
  int e = 0;
  const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const int exponent = e - 1;
  const auto fraction = static_cast<uint32_t>(std::nearbyint((m * 2.0f - 1.0f) * steps));
  return (static_cast<uint32_t>(exponent + bias) << mantissa_bits) + fraction;
}

}  // namespace detail

/// float32 -> float8 e4m3fn as torch casts: round to nearest even; NaN, an
/// infinity or a magnitude that rounds past 448 becomes NaN (the format has no
/// infinity); the sign is kept.
inline uint8_t float_to_float8_e4m3fn(float f) noexcept {
  const uint8_t sign = (float_bits(f) & 0x80000000u) ? 0x80u : 0x00u;
  const float a = std::fabs(f);
  if (!(a < 480.0f)) return static_cast<uint8_t>(sign | 0x7fu);
  const uint32_t code = detail::float8_magnitude_code(a, 3, 7);
  return static_cast<uint8_t>(sign | (code >= 0x7fu ? 0x7fu : code));
}

/// float32 -> float8 e5m2 as torch casts: round to nearest even; a magnitude
/// that rounds past 57344 becomes infinity; NaN stays NaN; the sign is kept.
inline uint8_t float_to_float8_e5m2(float f) noexcept {
  const uint8_t sign = (float_bits(f) & 0x80000000u) ? 0x80u : 0x00u;
  if (std::isnan(f)) return static_cast<uint8_t>(sign | 0x7fu);
  const float a = std::fabs(f);
  if (!(a < 65536.0f)) return static_cast<uint8_t>(sign | 0x7cu);
  const uint32_t code = detail::float8_magnitude_code(a, 2, 15);
  return static_cast<uint8_t>(sign | (code >= 0x7cu ? 0x7cu : code));
}

}  // namespace kiln
