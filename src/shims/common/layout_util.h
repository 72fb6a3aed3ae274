// Stride rules shared by shims that allocate "like" another tensor (clone,
// attention outputs), mirroring ATen's memory-format-preserving allocation so
// that strides the compiled model baked in at export match at run time.
// Exported for the CUDA plugin's ops, which follow the same rules.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kiln/error.h"
#include "kiln/export.h"

namespace kiln::aoti {

/// The sizes of a reduction over `dim` (already wrapped): the dimension
/// dropped, or kept with size 1 under keepdim; a 0-d input gives 0-d.
inline std::vector<int64_t> reduced_sizes(std::span<const int64_t> sizes, int64_t dim, bool keepdim) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (static_cast<int64_t>(d) != dim) out.push_back(sizes[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

/// True if the elements tile a contiguous block exactly once under some
/// permutation of dimensions (size-1 dimensions ignored).
KILN_API bool non_overlapping_and_dense(std::span<const int64_t> sizes, std::span<const int64_t> strides);

/// Strides for a fresh tensor "like" one with these sizes/strides (ATen's
/// empty_like with preserve_format): the same strides if that tensor is
/// non-overlapping and dense, else dense strides in its memory order.
KILN_API std::vector<int64_t> strides_like(std::span<const int64_t> sizes, std::span<const int64_t> strides);

/// True if a 4-d (5-d) tensor's strides look channels-last (channels-last-3d)
/// to ATen's suggest_memory_format (c10's is_channels_last_strides_2d/_3d):
/// dimensions C, then the spatial ones from last to first, then N, by
/// increasing stride. False for any other rank.
KILN_API bool strides_like_channels_last(std::span<const int64_t> sizes, std::span<const int64_t> strides);

/// The strides ATen gives a new 4-d (5-d) tensor allocated channels-last
/// (channels-last-3d): c10's get_channels_last_strides_2d/_3d.
KILN_API std::vector<int64_t> channels_last_strides(std::span<const int64_t> sizes);

/// The broadcast of two shapes (aligned at the last dimension), or an error
/// naming both arguments.
KILN_API Result<std::vector<int64_t>> broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b,
                                                       const char* name_a, const char* name_b);

/// Strides TensorIterator gives a new result of `shape` computed from inputs
/// with `input_strides` (each already broadcast to `shape`: stride 0 on a
/// broadcast dimension): dimensions sorted by the inputs' strides (innermost
/// first; a stride-0 dimension gives no opinion, equal strides put the
/// smaller size inside), then packed densely. So a transposed input gives a
/// transposed result.
KILN_API std::vector<int64_t> elementwise_strides(std::span<const int64_t> shape,
                                                  std::span<const std::vector<int64_t>> input_strides);

}  // namespace kiln::aoti
