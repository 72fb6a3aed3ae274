// Inclusive scans (cumsum, cumprod) along one dimension on the GPU: one
// thread block per line, CUB's block scan over tiles with the running total
// carried between tiles. Input of any dtype and strides, read as int64 or
// double; output contiguous.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

enum class ScanOp { Sum, Product };

/// out (contiguous, `out_dtype`) = scan of `in` along the dimension split as
/// outer x size x inner in row-major order of in_index's sizes.
Error launch_scan(const void* in, DType in_dtype, const StridedIndexer& in_index, void* out, DType out_dtype,
                  int64_t outer, int64_t size, int64_t inner, ScanOp op, cudaStream_t stream);

}  // namespace kiln::cudadev
