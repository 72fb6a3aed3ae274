// ATen's integer pow, shared by the CPU op and the CUDA kernel: raising by
// squaring with two's-complement wrap-around on overflow, and a negative
// exponent gives 0 except for bases 1 and -1 (integer division's result).
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace kiln {

/// a * b wrapping around in 64 bits (no signed-overflow UB).
KILN_HOST_DEVICE inline int64_t wrapping_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

KILN_HOST_DEVICE inline int64_t integer_pow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exp & 1) ? -1 : 1;
    return 0;
  }
  int64_t result = 1;
  while (exp != 0) {
    if (exp & 1) result = wrapping_mul(result, base);
    exp >>= 1;
    base = wrapping_mul(base, base);
  }
  return result;
}

}  // namespace kiln
