// In-place activations over a dense buffer, for products whose activation
// cuBLASLt's epilogue cannot apply (ATen's _addmm_activation outside its
// cuBLASLt conditions runs addmm, then relu_ or gelu_(approximate="tanh")).
// float16 and bfloat16 compute in float32 and round once, float64 in float64,
// as ATen's CUDA kernels.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

enum class Activation {
  None,
  Relu,      ///< max(x, 0); NaN stays NaN, as ATen's relu
  GeluTanh,  ///< 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): GELU's tanh approximation
};

/// x[i] = act(x[i]) for i < numel, enqueued on `stream`. float16, bfloat16,
/// float32 and float64; NotSupported for other dtypes.
Error launch_activation(void* x, DType dtype, int64_t numel, Activation act, cudaStream_t stream);

}  // namespace kiln::cudadev
