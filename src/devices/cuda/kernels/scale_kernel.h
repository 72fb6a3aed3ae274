// In-place scaling of a strided tensor, x = scale * x, for the matrix
// products whose inner dimension is empty (their result is beta times the
// addend, or zeros). float16 and bfloat16 multiply in float32 and round once,
// float32 and complex64 in float32, float64 and complex128 in float64, as
// ATen's mul_ with a real scalar.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// x = scale * x over the elements that `sizes` and element `strides` (ndim
/// of them, at most 12) describe, enqueued on `stream`. With scale == 0 x is
/// only written, never read, so NaN or infinity there does not survive.
/// float16, bfloat16, float32, float64, complex64 and complex128; NotSupported
/// for other dtypes.
Error launch_scale(void* x, const int64_t* sizes, const int64_t* strides, int64_t ndim, DType dtype, double scale,
                   cudaStream_t stream);

}  // namespace kiln::cudadev
