// _trilinear on the GPU (kernels/trilinear_kernel.cu): every result element
// is the sum, over the summed dims, of the product of three strided
// operands. A warp per result element strides over the summed positions
// (coalesced when the innermost summed dim is contiguous, as nn.Bilinear's
// weight is) and reduces with shuffles; a thread per element when there are
// fewer than a warp's worth of positions.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// The kept (result) dims and the summed dims, each with its size and the
/// three operands' element strides along it (0 where an operand is
/// unsqueezed or broadcast). The result is contiguous over the kept dims.
struct TrilinearGeometry {
  static constexpr int kMaxDims = 12;
  int out_ndim = 0;
  int sum_ndim = 0;
  int64_t out_sizes[kMaxDims] = {};
  int64_t sum_sizes[kMaxDims] = {};
  int64_t out_strides[3][kMaxDims] = {};
  int64_t sum_strides[3][kMaxDims] = {};
  int64_t outputs = 0;  ///< product of out_sizes
  int64_t terms = 1;    ///< product of sum_sizes
};

/// out = sum of a * b * c over the summed dims, in float32 for
/// float16/bfloat16/float32, float64, complex<float>/complex<double>, and
/// wrapping 64-bit integers for int8/uint8/int16/int32/int64 (stored
/// truncated to the dtype, as wrapping in it would give).
Error launch_trilinear(const void* a, const void* b, const void* c, void* out, DType dtype,
                       const TrilinearGeometry& g, cudaStream_t stream);

/// Whether launch_trilinear takes `dtype`.
bool trilinear_dtype(DType dtype);

}  // namespace kiln::cudadev
