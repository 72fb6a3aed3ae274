// Bags of embedding rows (nn.EmbeddingBag) on the GPU, computed as ATen's
// CUDA kernels compute them: one thread per (bag, feature) walks the bag's
// indices in order, summing in float (double for float64 weights) with
// per_sample_weights fused in, dividing by the count of non-padding indices
// for mean, or keeping the first strictly greater value for max. Bag b holds
// indices[offsets[b], offsets[b + 1]) and the last bag runs to the end of
// indices, with include_last_offset too (ATen's CUDA kernel ignores offsets'
// last entry).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::cudadev {

enum class BagMode { Sum = 0, Mean = 1, Max = 2 };

struct EmbeddingBagArgs {
  const void* weight = nullptr;  ///< [rows, features], float32/float64/float16/bfloat16, any strides
  DType weight_dtype = DType::Float32;
  int64_t rows = 0, features = 0, weight_stride0 = 0, weight_stride1 = 0;
  const void* indices = nullptr;  ///< [count] int32/int64, element stride indices_stride
  DType indices_dtype = DType::Int64;
  int64_t count = 0, indices_stride = 1;
  const void* offsets = nullptr;  ///< [num_offsets] int32/int64, element stride offsets_stride
  DType offsets_dtype = DType::Int64;
  int64_t num_offsets = 0, offsets_stride = 1;
  int64_t bags = 0;                           ///< num_offsets, less one with include_last_offset
  const void* per_sample_weights = nullptr;   ///< [count] in weight's dtype, or null
  int64_t per_sample_weights_stride = 1;
  BagMode mode = BagMode::Sum;
  int64_t padding_idx = -1;  ///< as the index dtype holds it (ATen narrows it to int32 for int32 indices)
  // Results, contiguous: output [bags, features] in weight's dtype; offset2bag
  // [count], bag_size [num_offsets] (entries past `bags` zero) and, for max,
  // max_indices [bags, features] in aux_dtype.
  void* output = nullptr;
  void* offset2bag = nullptr;
  void* bag_size = nullptr;
  void* max_indices = nullptr;
  DType aux_dtype = DType::Int64;
  /// Device memory for two uint64: the first offset position that breaks
  /// the offsets' rules (offsets[0] == 0, non-decreasing, at most count) and
  /// the first position of indices holding a row out of [0, rows). Each is
  /// UINT64_MAX when there is none. Bags are clamped to indices and rows out
  /// of range are skipped, so the kernels never read outside their inputs
  /// whatever the data.
  unsigned long long* first_bad = nullptr;
};

/// Queues the kernels on `stream` (asynchronous; nothing is read back).
Error launch_embedding_bag(const EmbeddingBagArgs& args, cudaStream_t stream);

}  // namespace kiln::cudadev
