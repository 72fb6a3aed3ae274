// torch.cat on the GPU: the inputs of one batch copied into their slices of
// the result by one launch (grid y picks the input), each read at its own
// strides and converted to the result's dtype with ATen's casts.
// The host plans the result (shims/common/cat_args.h, shims/cuda/cat.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

/// One input: its sizes are the result's except `size` along the cat
/// dimension; it lands at position `at` along that dimension.
struct CatPiece {
  const void* data = nullptr;
  DType dtype = DType::Float32;
  int64_t size = 0;
  int64_t at = 0;
  int64_t numel = 0;
  int64_t strides[StridedIndexer::kMaxDims] = {};
};

/// Inputs per launch: the batch travels as a kernel argument (sm_90 with
/// CUDA 12.1 or later takes up to 32 KB of them), so nothing is copied to the
/// device first and the launch captures into a CUDA graph as it is.
constexpr int kCatBatch = 64;

struct CatBatch {
  void* out = nullptr;
  DType out_dtype = DType::Float32;
  int out_bytes = 0;  ///< element size of out_dtype
  int dim = 0;
  StridedIndexer result;  ///< the result's sizes and strides
  int count = 0;
  int64_t max_numel = 0;
  CatPiece pieces[kCatBatch];
};

/// Copies every piece of `batch` (count >= 1, each with numel >= 1).
Error launch_cat(const CatBatch& batch, cudaStream_t stream);

}  // namespace kiln::cudadev
