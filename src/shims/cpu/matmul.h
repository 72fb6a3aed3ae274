// Matrix products over kiln::Tensor operands, for the CPU ops that multiply
// (the mm/addmm/bmm fallbacks, Kiln's fused rms_norm_linear).
#pragma once

#include <cstdint>

#include "kiln/error.h"
#include "kiln/tensor.h"

namespace kiln::cpu {

/// out = beta * init + alpha * (a @ b) over 2-d (batch_dims 0) or 3-d
/// (batch_dims 1) operands of out's dtype, any strides. `init` (already
/// broadcast to out's shape) is read only when beta != 0. float32/float64
/// go to BLAS on the tensors' own memory; bfloat16/float16 are widened to
/// float32, multiplied, and rounded once on store; integer (wrapping) and complex
/// dtypes take a plain loop. NotSupported for bool and float8.
Error matmul(const Tensor& out, const Tensor* init, const Tensor& a, const Tensor& b, double beta, double alpha,
             int64_t batch_dims);

}  // namespace kiln::cpu
