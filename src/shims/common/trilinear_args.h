// _trilinear's geometry, checked as every device checks it: i1, i2 and i3
// are unsqueezed at the dims of expand1/2/3 to one common rank, broadcast
// against each other, multiplied, and summed over sumdim (those dims are
// dropped from the result). The devices differ only in how they walk the
// operands (their strides) and accumulate.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "shims/common/op_util.h"
#include "shims/common/shim_util.h"

namespace kiln::aoti::trilinear {

constexpr int64_t kMaxDims = 64;

/// A dim list (each in [-total, total), none twice) as a set of wrapped dims,
/// or an error naming argument `name`.
inline Result<std::bitset<kMaxDims>> dim_set(const int64_t* ptr, int64_t len, int64_t total, const char* name) {
  KILN_ASSIGN_OR_RETURN(std::span<const int64_t> dims, int_array_arg(ptr, len, name));
  std::bitset<kMaxDims> set;
  for (int64_t d : dims) {
    KILN_ASSIGN_OR_RETURN(int64_t w, wrap_dim(d, total, name));
    if (set[static_cast<size_t>(w)])
      return invalid(std::string("argument '") + name + "' repeats dim " + std::to_string(d));
    set[static_cast<size_t>(w)] = true;
  }
  return set;
}

/// The common geometry of the three operands.
struct Plan {
  int64_t total = 0;                        ///< the common rank
  std::vector<int64_t> common;              ///< each common dim's size, the operands broadcast
  std::vector<int64_t> out_dims;            ///< the common dims the result keeps, in order
  std::vector<int64_t> sum_dims;            ///< the common dims summed over, in order
  std::vector<int64_t> out_sizes;           ///< the result's sizes
  std::array<std::vector<int64_t>, 3> own;  ///< per operand and common dim: its own dim, -1 where unsqueezed
};

/// Operand `i`'s element strides along every common dim, from its own
/// `sizes` and `strides`: 0 where it is unsqueezed or of size 1 (broadcast).
inline std::vector<int64_t> common_strides(const Plan& p, int i, std::span<const int64_t> sizes,
                                           std::span<const int64_t> strides) {
  std::vector<int64_t> out(static_cast<size_t>(p.total), 0);
  for (int64_t d = 0; d < p.total; ++d) {
    const int64_t own = p.own[static_cast<size_t>(i)][static_cast<size_t>(d)];
    if (own >= 0 && sizes[static_cast<size_t>(own)] != 1)
      out[static_cast<size_t>(d)] = strides[static_cast<size_t>(own)];
  }
  return out;
}

/// Checks the operands' sizes with their expand lists (each reaching rank
/// i1.dim() + len(expand1)), sumdim and unroll_dim (a dim of that rank, as
/// ATen requires; it only orders ATen's loops), and that the operands
/// broadcast.
inline Result<Plan> plan(const std::array<std::span<const int64_t>, 3>& sizes, const int64_t* const expands[3],
                         const int64_t expand_lens[3], const int64_t* sumdim, int64_t sumdim_len, int64_t unroll_dim) {
  static constexpr const char* names[3] = {"i1", "i2", "i3"};
  static constexpr const char* expand_names[3] = {"expand1", "expand2", "expand3"};
  for (int i = 0; i < 3; ++i)
    if (expand_lens[i] < 0) return invalid(std::string("argument '") + expand_names[i] + "' has negative length");
  Plan p;
  p.total = static_cast<int64_t>(sizes[0].size()) + expand_lens[0];
  if (p.total > kMaxDims) return invalid("too many dimensions");
  for (int i = 0; i < 3; ++i) {
    if (static_cast<int64_t>(sizes[i].size()) + expand_lens[i] != p.total)
      return invalid(std::string("argument '") + names[i] + "' of shape " + shape_string(sizes[i]) + " with " +
                     expand_names[i] + " does not reach rank " + std::to_string(p.total));
    KILN_ASSIGN_OR_RETURN(std::bitset<kMaxDims> ex, dim_set(expands[i], expand_lens[i], p.total, expand_names[i]));
    int64_t own = 0;
    for (int64_t d = 0; d < p.total; ++d)
      p.own[static_cast<size_t>(i)].push_back(ex[static_cast<size_t>(d)] ? -1 : own++);
  }
  KILN_ASSIGN_OR_RETURN(std::bitset<kMaxDims> sum, dim_set(sumdim, sumdim_len, p.total, "sumdim"));
  if (unroll_dim < 0 || unroll_dim >= p.total)
    return invalid("argument 'unroll_dim' is " + std::to_string(unroll_dim) + ", expected a dim in [0, " +
                   std::to_string(p.total - 1) + "]");
  for (int64_t d = 0; d < p.total; ++d) {
    int64_t s = 1;
    for (int i = 0; i < 3; ++i) {
      const int64_t own = p.own[static_cast<size_t>(i)][static_cast<size_t>(d)];
      const int64_t z = own < 0 ? 1 : sizes[i][static_cast<size_t>(own)];
      if (z != 1 && s != 1 && z != s)
        return invalid("sizes of i1, i2, i3 do not broadcast at dim " + std::to_string(d));
      if (z != 1) s = z;
    }
    p.common.push_back(s);
    if (sum[static_cast<size_t>(d)]) {
      p.sum_dims.push_back(d);
    } else {
      p.out_dims.push_back(d);
      p.out_sizes.push_back(s);
    }
  }
  return p;
}

}  // namespace kiln::aoti::trilinear
