// aten::_fused_rms_norm on the GPU: per row of `inner` elements, rstd =
// rsqrt(mean(x^2) + eps) accumulated in float32 (float64 for float64), and
// y = x * rstd (* weight). A warp per row for rows of up to 1024 elements, a
// block per row above. The host checks and plans (shims/cuda/fused_rms_norm.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

struct RmsNormArgs {
  const void* x = nullptr;      ///< input of `dtype`, row-major element k at x_index.offset(k)
  StridedIndexer x_index;
  bool x_contiguous = false;    ///< element k at k (x_index unused)
  const void* weight = nullptr; ///< null: no weight; else `inner` elements of weight_dtype at weight_index
  DType weight_dtype = DType::Float32;
  StridedIndexer weight_index;
  void* y = nullptr;            ///< contiguous, `dtype`
  void* rstd = nullptr;         ///< contiguous, float32 (float64 for float64), one per row
  DType dtype = DType::Float32; ///< float32, float64, float16 or bfloat16
  int64_t rows = 0;
  int64_t inner = 0;
  double eps = 0.0;
};

Error launch_rms_norm(const RmsNormArgs& a, cudaStream_t stream);

}  // namespace kiln::cudadev
