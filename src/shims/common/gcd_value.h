// The greatest common divisor as ATen's gcd kernels compute it, for the CPU
// and CUDA gcd ops alike: in the result's integer type T, |a| and |b| wrap
// (the most negative value stays negative) and % truncates toward zero, so
// such a value gives ATen's answer, which can be negative; gcd(0, 0) = 0.
// Header-only, usable from host and CUDA device code.
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define KILN_GCD_HOST_DEVICE __host__ __device__
#else
#define KILN_GCD_HOST_DEVICE
#endif

namespace kiln::aoti {

template <typename T>
KILN_GCD_HOST_DEVICE inline T gcd_magnitude(T v) {
  if constexpr (std::is_signed_v<T>) return v < 0 ? static_cast<T>(0 - static_cast<uint64_t>(v)) : v;
  else return v;
}

template <typename T>
KILN_GCD_HOST_DEVICE inline T gcd_value(T x, T y) {
  T a = gcd_magnitude(x), b = gcd_magnitude(y);
  while (a != 0) {
    const T c = a;
    a = static_cast<T>(b % a);
    b = c;
  }
  return b;
}

}  // namespace kiln::aoti
