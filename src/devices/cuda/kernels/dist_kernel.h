// p-norm distances between rows on the GPU (cdist, pdist): a thread per
// distance, summing in the input's dtype (float32 or float64) as ATen's CUDA
// kernels do. p = 0 counts differing coordinates, p = inf takes the largest
// difference. cdist's matrix-product Euclidean path (|a|^2 + |b|^2 - 2 a.b,
// clamped at 0) is computed from the same sums. The host checks and plans
// (shims/common/dist_args.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

struct CdistArgs {
  const void* x1 = nullptr;
  const void* x2 = nullptr;
  DType dtype = DType::Float32;   ///< float32 or float64, both inputs and the result
  StridedIndexer x1_index;        ///< x1 broadcast to batch + (rows1, cols)
  StridedIndexer x2_index;        ///< x2 broadcast to batch + (rows2, cols)
  int64_t batches = 0, rows1 = 0, rows2 = 0, cols = 0;
  double p = 2.0;
  bool by_product = false;
  void* out = nullptr;            ///< contiguous batch + (rows1, rows2)
};

Error launch_cdist(const CdistArgs& a, cudaStream_t stream);

struct PdistArgs {
  const void* x = nullptr;
  DType dtype = DType::Float32;
  StridedIndexer x_index;         ///< (n, cols)
  int64_t n = 0, cols = 0;
  double p = 2.0;
  void* out = nullptr;            ///< n (n - 1) / 2 distances, pair (i, j > i) in row-major order
};

Error launch_pdist(const PdistArgs& a, cudaStream_t stream);

}  // namespace kiln::cudadev
