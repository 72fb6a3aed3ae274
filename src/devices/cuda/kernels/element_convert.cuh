// Device-side conversions between the floating element types Kiln's CUDA
// kernels take (float32, float16, bfloat16, float64) and the type they compute
// in (float32; float64 for float64).
// Shared by the element-wise kernels (bias_kernel.cu, gemv_kernel.cu) and the
// attention kernels.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kiln/dtype.h"

namespace kiln::cudadev {

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__half v) { return __half2float(v); }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

/// Element i of a float16/bfloat16/float32 array whose dtype is known only at
/// run time (any other dtype is read as float32), as float32.
__device__ inline float load_as_float(const void* p, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::BFloat16: return to_float(static_cast<const __nv_bfloat16*>(p)[i]);
    case DType::Float16: return to_float(static_cast<const __half*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

/// Rounds to nearest even, as torch does when it stores a float32 result.
template <typename T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) { return v; }
template <>
__device__ inline __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/// The type a kernel computes in for elements of T: float32, or float64 for float64.
template <typename T>
struct ComputeType {
  using type = float;
};
template <>
struct ComputeType<double> {
  using type = double;
};
template <typename T>
using compute_t = typename ComputeType<T>::type;

/// An element in its compute type.
template <typename T>
__device__ inline compute_t<T> widen(T v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return to_float(v);
  }
}

/// A compute-type value stored as T (rounded to nearest even).
template <typename T>
__device__ inline T narrow(compute_t<T> v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return from_float<T>(v);
  }
}

}  // namespace kiln::cudadev
