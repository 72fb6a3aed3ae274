// Inclusive scans (cumsum, cumprod, logcumsumexp, cummax, cummin) along one
// dimension on the GPU: one thread block per line, CUB's block scan over
// tiles with the running result carried between tiles. Input of any dtype
// and strides, read as int64 or double; output contiguous.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// LogSumExp: the running log(sum(exp(x))) of floating input, in double.
enum class ScanOp { Sum, Product, LogSumExp };

/// out (contiguous, `out_dtype`) = scan of `in` along the lines of `line`
/// (in row-major order of in_index's sizes).
Error launch_scan(const void* in, DType in_dtype, const StridedIndexer& in_index, void* out, DType out_dtype,
                  const LineShape& line, ScanOp op, cudaStream_t stream);

/// values (contiguous, in_dtype) and indices (contiguous int64) = the running
/// maximum (`max`) or minimum of `in` along the dimension split as for
/// launch_scan, and the position it was last reached at: an element equal to
/// the running value takes over (ties give the last position) and so does a
/// NaN, which then stays since nothing compares above it (each later NaN
/// takes the position over).
Error launch_cum_extreme(const void* in, DType in_dtype, const StridedIndexer& in_index, void* values,
                         int64_t* indices, const LineShape& line, bool max, cudaStream_t stream);

}  // namespace kiln::cudadev
