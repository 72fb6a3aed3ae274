// The int8-quantized matrix products that cuBLASLt does not cover (or not
// for every layout): _int_mm's int8 x int8 -> int32 for any strides, and
// _weight_int8pack_mm's activations times an int8 weight stored n x k,
// scaled per output column.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// A matrix of any strides: element (r, c) at ptr[r * rs + c * cs].
template <typename T>
struct StridedMatrix {
  T* ptr = nullptr;
  int64_t rs = 0;
  int64_t cs = 0;
};

/// out (m x n) = a (m x k) @ b (k x n), int8 products summed in int32 with
/// wraparound, as ATen's int32 accumulation. A tiled kernel for layouts
/// cuBLASLt's int8 kernels refuse. k == 0 writes zeros.
Error launch_int_mm_tiled(StridedMatrix<const int8_t> a, StridedMatrix<const int8_t> b, StridedMatrix<int32_t> out,
                          int64_t m, int64_t n, int64_t k, cudaStream_t stream);

/// out (m x n, contiguous, x's dtype) = (x (m x k) @ w (n x k)^T) * scales[j]
/// per column j, dot products in float32 rounded once to x's dtype. x and
/// scales are float32, bfloat16 or float16 (`dtype`); x has any strides,
/// scales stride `scales_stride`. Each weight row is read once per group of
/// up to four rows of x, in 16-byte loads when its rows are contiguous and
/// 16-byte aligned (4-byte loads when 4-byte aligned).
Error launch_weight_int8pack_mm(const void* x, int64_t x_rs, int64_t x_cs, StridedMatrix<const int8_t> w,
                                const void* scales, int64_t scales_stride, DType dtype, void* out, int64_t m,
                                int64_t n, int64_t k, cudaStream_t stream);

}  // namespace kiln::cudadev
