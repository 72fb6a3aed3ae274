// Scatter on the GPU (scatter, scatter_reduce.two, index_reduce): one thread
// per index element writes, or atomically folds, one element of `out`. The
// host checks the shapes and plans the strides (shims/cuda/scatter.cpp,
// index_reduce.cpp); the index values never leave the device except for the
// one that an error message names.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

enum class ScatterOp : int { Assign, Sum, Prod, Max, Min };

/// Element k of the scatter (row-major over `sizes`, ndim >= 1) reads its
/// index value v at index_strides, its source element at src_strides, and
/// targets out at out_strides with its coordinate along `dim` replaced by v
/// (and, for mean's counts, the same coordinates at count_strides). A value
/// outside [0, dim_size) is skipped.
struct ScatterPlan {
  static constexpr int kMaxDims = StridedIndexer::kMaxDims;
  int ndim = 0;
  int dim = 0;
  int64_t dim_size = 0;
  int64_t numel = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t index_strides[kMaxDims] = {};
  int64_t out_strides[kMaxDims] = {};
  int64_t src_strides[kMaxDims] = {};
  int64_t count_strides[kMaxDims] = {};
  const void* index = nullptr;
  DType index_dtype = DType::Int64;
  void* out = nullptr;
  DType dtype = DType::Float32;
  const void* src = nullptr;  ///< null: every element takes `value`
  double value = 0.0;
};

/// True if the reduction `op` has a kernel for `dtype` (ATen CUDA's dispatch:
/// sum takes bool, uint8, int8, int16, int32, int64, float16, bfloat16,
/// float32, float64 and complex; prod, amax, amin and mean the same less
/// bool and complex).
bool scatter_reduce_supports(ScatterOp op, DType dtype);

/// first_bad[0] = the smallest k whose index value lies outside [0,
/// dim_size), or stays as it was (set it to all ones first).
Error launch_scatter_index_check(const ScatterPlan& p, unsigned long long* first_bad, cudaStream_t stream);

/// Assign: out[target] = src element (any dtype, copied as bytes) or `value`
/// converted to the dtype (ATen's casts; complex gets value + 0i). A
/// reduction: out[target] = op(out[target], src element), atomically.
Error launch_scatter(const ScatterPlan& p, ScatterOp op, cudaStream_t stream);

/// out[target] = the identity of `op` (0 for sum, 1 for prod, the lowest
/// value or -inf for amax, the highest or +inf for amin): where include_self
/// is false, the targets start from it.
Error launch_scatter_identity(const ScatterPlan& p, ScatterOp op, cudaStream_t stream);

/// counts[offset at count_strides] += 1 per element (for mean).
Error launch_scatter_count(const ScatterPlan& p, unsigned long long* counts, cudaStream_t stream);

/// Mean's division: element k of `out` (row-major over `out_index`) with
/// n = counts[k] > 0 contributions becomes out / (n + include_self), the
/// count taken as ATen accumulates it in the dtype; integers floor.
Error launch_scatter_mean(void* out, DType dtype, const StridedIndexer& out_index, const unsigned long long* counts,
                          bool include_self, int64_t numel, cudaStream_t stream);

}  // namespace kiln::cudadev
