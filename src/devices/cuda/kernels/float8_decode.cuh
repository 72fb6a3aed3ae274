// Device-side widening of float8 codes (e4m3fn, e5m2) to float32, exact: every
// float8 value is a float32 value. Shared by the float8 products
// (scaled_mm_kernel.cu, scaled_grouped_mm_kernel.cu).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace kiln::cudadev {

/// float8 e4m3fn -> float32: no infinities, S.1111.111 is NaN, exponent 0
/// holds subnormals in units of 2^-9.
__device__ inline float e4m3fn_to_float(uint8_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x80u) << 24;
  const uint32_t exponent = (bits >> 3) & 0xfu, mantissa = bits & 0x7u;
  if (exponent == 0xfu && mantissa == 0x7u) return __uint_as_float(sign | 0x7fc00000u);
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * (1.0f / 512.0f);
    return sign ? -magnitude : magnitude;
  }
  return __uint_as_float(sign | ((exponent + 120u) << 23) | (mantissa << 20));
}

/// float8 e5m2 -> float32: e5m2 is float16 without its low 8 mantissa bits.
__device__ inline float e5m2_to_float(uint8_t bits) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(static_cast<unsigned>(bits) << 8)));
}

__device__ inline float float8_to_float(uint8_t bits, bool e4m3) {
  return e4m3 ? e4m3fn_to_float(bits) : e5m2_to_float(bits);
}

}  // namespace kiln::cudadev
