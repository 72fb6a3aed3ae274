// Advanced indexing on the GPU (x[idx], x[:, i, j], x[mask] once the mask is
// turned into coordinates): a check of every index value against its
// dimension, a gather of the selected elements into a strided result, and
// index_put's write (or atomic accumulation) of values into them.
// The host plans the shapes (shims/cuda/index.cpp); the values never leave
// the device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/kernels/element_access.cuh"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

constexpr int kMaxIndexTensors = StridedIndexer::kMaxDims;

/// One index tensor broadcast to the index shape: its values (int64 or
/// int32) at `strides` over that shape, selecting along a dimension of
/// `dim_size` elements `self_stride` apart.
struct IndexOperand {
  const void* data = nullptr;
  DType dtype = DType::Int64;
  int64_t strides[StridedIndexer::kMaxDims] = {};
  int64_t dim_size = 0;
  int64_t self_stride = 0;
};

/// result = pre dims x index shape x post dims (row-major over
/// `result.sizes`, stored at `result.strides`); a pre/post dim is one of
/// self's unindexed dims, read at `pre_strides`/`post_strides`.
struct IndexGather {
  const char* self = nullptr;
  char* out = nullptr;
  int64_t element_bytes = 0;
  StridedIndexer result;
  int npre = 0, nb = 0, npost = 0;
  int64_t pre_strides[StridedIndexer::kMaxDims] = {};
  int64_t post_strides[StridedIndexer::kMaxDims] = {};
  int nindex = 0;
  IndexOperand index[kMaxIndexTensors];
};

/// For each index tensor k, first_bad[k] = the smallest row-major position
/// over the index shape (`index_sizes`, `nb` dims) of a value out of
/// [-dim_size, dim_size), or stays as it was (set it to all ones first).
Error launch_index_check(const IndexGather& g, const int64_t* index_sizes, int64_t index_numel,
                         unsigned long long* first_bad, cudaStream_t stream);

/// Gathers the result (out-of-range values are clamped, never read outside self).
Error launch_index_gather(const IndexGather& g, int64_t numel, cudaStream_t stream);

/// index_put into `g.out`, the clone of self that becomes the result (g's
/// pre/post/index strides are the clone's; g.result gives the indexing
/// result's sizes, its strides unused): element k of the
/// indexing result, in row-major order, is set to (or, with `accumulate`,
/// atomically incremented by; bool ORs) the value of `values` of `dtype` at
/// values_index.offset(k). `numel` is the indexing result's element count.
Error launch_index_put(const IndexGather& g, const void* values, DType dtype, const StridedIndexer& values_index,
                       bool accumulate, int64_t numel, cudaStream_t stream);

}  // namespace kiln::cudadev
