// A constant weight packed for packed_gemm once and kept with its storage.
//
// A program's weights never change while it is loaded (the loader marks their
// storages constant, kiln/storage.h), so the packing a GEMM needs is made on
// first use and shared by every later call, thread and method that reads the
// same view of the same bytes; it is freed with the weights.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/storage.h"

namespace kiln::cpu {

/// `groups` right operands of packed_gemm, one after another: group g is the
/// k x n matrix whose element (l, j) is at
/// data[g * group_step + l * row_stride + j * col_stride], packed.
struct PackedWeight {
  std::vector<float> floats;
  int64_t group_floats = 0;  // floats between the groups' packings

  /// Group g's packing from its panel-aligned column j0 on.
  const float* panels(int64_t g, int64_t j0, int64_t k) const { return floats.data() + g * group_floats + j0 * k; }
};

/// The packing of the view at `data` (inside `storage`'s bytes), made on first
/// use and kept with the storage. Null when the storage is not constant, when
/// memory for the packing cannot be had, without AVX-512 (packed_gemm_available), or
/// with setting cpu_pack_weights off.
std::shared_ptr<const PackedWeight> packed_weight(const Storage& storage, const float* data, int64_t groups,
                                                  int64_t group_step, int64_t k, int64_t n, int64_t row_stride,
                                                  int64_t col_stride);

}  // namespace kiln::cpu
