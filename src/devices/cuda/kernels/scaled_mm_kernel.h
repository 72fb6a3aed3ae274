// The float8 matrix product of _scaled_mm for what cuBLASLt's float8 kernels
// do not take (layouts other than row-major x column-major, sizes and
// alignments they refuse, e5m2 x e5m2, result and bias dtypes outside their
// table): a tiled kernel that widens float8 to float32 exactly, sums the
// products in float32, applies the scales, bias and result scale, and
// converts to the result's dtype.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

struct ScaledMmKernelArgs {
  // self (m x k) and mat2 (k x n): float8 elements (r, c) at ptr[r * rs + c * cs].
  const uint8_t* a = nullptr;
  int64_t a_rs = 0, a_cs = 0;
  DType a_dtype = DType::Float8_e4m3fn;
  const uint8_t* b = nullptr;
  int64_t b_rs = 0, b_cs = 0;
  DType b_dtype = DType::Float8_e4m3fn;
  // float32 scales: row i of the product times scale_a[i * scale_a_stride],
  // column j times scale_b[j * scale_b_stride] (stride 0: one per tensor).
  const float* scale_a = nullptr;
  int64_t scale_a_stride = 0;
  const float* scale_b = nullptr;
  int64_t scale_b_stride = 0;
  // Optional: column j adds bias element j (row-major order of the bias's
  // own sizes, at bias_index.offset(j)), read in its dtype.
  const void* bias = nullptr;
  DType bias_dtype = DType::Float32;
  StridedIndexer bias_index;
  // Optional (one float32): multiplies the result before a float8 conversion.
  const float* scale_result = nullptr;
  // m x n result, any real, complex or float8 dtype.
  void* out = nullptr;
  int64_t o_rs = 0, o_cs = 0;
  DType out_dtype = DType::Float32;
  int64_t m = 0, n = 0, k = 0;
};

/// out = convert(((a @ b) * scale_a[i] * scale_b[j] + bias[j]) * scale_result).
/// With k == 0 the result is zeros (no bias), as ATen's CUDA op writes.
Error launch_scaled_mm_fallback(const ScaledMmKernelArgs& args, cudaStream_t stream);

}  // namespace kiln::cudadev
