// Window functions on the GPU (hann_window), computed as ATen composes them
// (shims/common/window_value.h, shared with the CPU op): each step rounded to
// the result's dtype, so narrow dtypes round as ATen's do.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// out (contiguous, `n` elements of a floating `dtype`) = ATen's periodic
/// hann window: 0.5 - 0.5 * cos(2 pi i / n); n = 1 gives [1].
Error launch_hann_window(void* out, DType dtype, int64_t n, cudaStream_t stream);

}  // namespace kiln::cudadev
