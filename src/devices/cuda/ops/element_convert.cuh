// Device-side conversions between the floating element types Kiln's CUDA
// kernels take (float32, float16, bfloat16) and the float32 they compute in.
// Shared by the element-wise kernels (bias_kernel.cu, gemv_kernel.cu).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kiln::cudadev {

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__half v) { return __half2float(v); }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

/// Rounds to nearest even, as torch does when it stores a float32 result.
template <typename T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) { return v; }
template <>
__device__ inline __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

}  // namespace kiln::cudadev
