// The periodic hann window's elements as ATen computes them, for the CPU and
// CUDA hann_window ops alike. ATen composes the window from tensor ops in the
// result's dtype: arange, mul_ by 2 pi / N (the factor reaches the kernel
// rounded to the dtype), cos_, mul_(-0.5), add_(0.5), each computing in the op
// math type (float32 for float16/bfloat16, float64 for float64) and rounding
// its result to the dtype. `round` is that rounding (identity for float32 and
// float64), so narrow dtypes round step by step as ATen's do.
// Header-only, usable from host and CUDA device code.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define KILN_WINDOW_HOST_DEVICE __host__ __device__
#else
#define KILN_WINDOW_HOST_DEVICE
#endif

namespace kiln::aoti {

template <typename A>
KILN_WINDOW_HOST_DEVICE inline A window_cos(A v) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<A, float>) return cosf(v);
  else return ::cos(v);
#else
  return std::cos(v);
#endif
}

/// Element i of ATen's periodic hann window of n elements, computed in A
/// (float or double) with every step rounded by `round` (A -> A).
template <typename A, typename Round>
KILN_WINDOW_HOST_DEVICE inline A hann_value(int64_t i, int64_t n, Round round) {
  if (n == 1) return A(1);
  // 2 pi / n: the periodic window is the first n of a symmetric one of n + 1.
  const A scale = round(static_cast<A>(6.283185307179586476925 / static_cast<double>(n)));
  A v = round(static_cast<A>(i));
  v = round(v * scale);
  v = round(window_cos(v));
  v = round(v * A(-0.5));
  return round(v + A(0.5));
}

}  // namespace kiln::aoti
