// _embedding_bag's arguments checked as both devices check them (dtypes,
// ranks, mode, per_sample_weights, the number of bags), before either reads
// the indices and offsets, which differ in where they live (host or device).
#pragma once

#include <optional>
#include <span>
#include <string>

#include "shims/common/op_util.h"

namespace kiln::aoti {

/// A tensor argument as the checks see it.
struct ArgShape {
  DType dtype;
  std::span<const int64_t> sizes;
};

struct EmbeddingBagShape {
  int64_t count = 0;        ///< indices
  int64_t num_offsets = 0;  ///< offsets' length
  int64_t bags = 0;         ///< num_offsets, less one with include_last_offset
  DType aux = DType::Int64; ///< the index results' dtype: int64 unless indices and offsets are both int32
};

inline constexpr int64_t kEmbeddingBagSum = 0, kEmbeddingBagMean = 1, kEmbeddingBagMax = 2;

/// The checked shapes, or an error naming the argument that is wrong.
inline Result<EmbeddingBagShape> embedding_bag_args(ArgShape weight, ArgShape indices, ArgShape offsets, int64_t mode,
                                                    std::optional<ArgShape> per_sample_weights,
                                                    bool include_last_offset) {
  const DType wt = weight.dtype;
  if (wt != DType::Float32 && wt != DType::Float64 && wt != DType::Float16 && wt != DType::BFloat16)
    return invalid(std::string("argument 'weight' has dtype ") + dtype_name(wt) +
                   ", expected float32, float64, float16 or bfloat16");
  if (weight.sizes.size() != 2)
    return invalid("argument 'weight' has shape " + shape_string(weight.sizes) + ", expected 2-d");
  KILN_RETURN_IF_ERROR(index_dtype_check(indices.dtype, "indices"));
  KILN_RETURN_IF_ERROR(index_dtype_check(offsets.dtype, "offsets"));
  if (indices.sizes.size() != 1)
    return invalid("argument 'indices' has shape " + shape_string(indices.sizes) +
                   ", expected 1-d (flatten 2-d input and pass its bag offsets)");
  if (offsets.sizes.size() != 1)
    return invalid("argument 'offsets' has shape " + shape_string(offsets.sizes) + ", expected 1-d");
  if (mode != kEmbeddingBagSum && mode != kEmbeddingBagMean && mode != kEmbeddingBagMax)
    return invalid("argument 'mode' is " + std::to_string(mode) + ", expected 0 (sum), 1 (mean) or 2 (max)");
  EmbeddingBagShape s;
  s.count = indices.sizes[0];
  if (per_sample_weights) {
    const ArgShape& p = *per_sample_weights;
    if (mode != kEmbeddingBagSum) return invalid("argument 'per_sample_weights' is only supported with mode sum");
    if (p.dtype != wt)
      return invalid(std::string("argument 'per_sample_weights' has dtype ") + dtype_name(p.dtype) +
                     ", expected weight's " + dtype_name(wt));
    if (p.sizes.size() != 1 || p.sizes[0] != s.count)
      return invalid("argument 'per_sample_weights' has shape " + shape_string(p.sizes) + ", expected [" +
                     std::to_string(s.count) + "] (one weight per index)");
  }
  s.num_offsets = offsets.sizes[0];
  if (include_last_offset && s.num_offsets < 1)
    return invalid("argument 'offsets' is empty, but include_last_offset needs at least one offset");
  s.bags = s.num_offsets - (include_last_offset ? 1 : 0);
  if (s.bags == 0 && s.count > 0)
    return invalid("argument 'offsets' makes no bags, but 'indices' has " + std::to_string(s.count) + " entries");
  s.aux = indices.dtype == DType::Int64 || offsets.dtype == DType::Int64 ? DType::Int64 : DType::Int32;
  return s;
}

}  // namespace kiln::aoti
