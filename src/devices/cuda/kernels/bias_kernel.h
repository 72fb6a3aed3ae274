// y[n, c, ...] += bias[c] over a dense tensor whose channel dimension has
// element stride `channel_stride` (HW... for NCHW, 1 for NHWC). Half and
// bfloat16 add in float32 and round once.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

Error launch_add_channel_bias(void* y, const void* bias, DType dtype, int64_t numel, int64_t channels,
                              int64_t channel_stride, cudaStream_t stream);

}  // namespace kiln::cudadev
