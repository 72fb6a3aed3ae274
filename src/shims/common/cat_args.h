// aten::cat's arguments checked and its result planned as ATen's shared meta
// function does, for every device's aoti_torch_<device>_cat: the result dtype
// promotes over all inputs; a legacy empty 1-d tensor of shape [0] is skipped
// (beside tensors of other ranks, and for wrapping dim); every other input has
// the same rank (not 0) and the same sizes outside `dim`. The result is
// channels-last (4-d or 5-d) when every input's layout suggests it, else
// contiguous. The devices differ only in how they copy.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/dtype_promotion.h"
#include "kiln/tensor.h"  // contiguous_strides
#include "shims/common/layout_util.h"
#include "shims/common/op_util.h"

namespace kiln::aoti {

struct CatOperand {
  std::span<const int64_t> sizes;
  std::span<const int64_t> strides;
  DType dtype = DType::Float32;
};

struct CatPlan {
  DType dtype = DType::Float32;
  int64_t dim = 0;               ///< wrapped; 0 when every input is skipped
  std::vector<int64_t> sizes;    ///< the result's
  std::vector<int64_t> strides;  ///< the result's
  std::vector<int64_t> at;       ///< each input's first position along dim in the result
};

/// A legacy empty tensor, which cat skips.
inline bool cat_skips(std::span<const int64_t> sizes) { return sizes.size() == 1 && sizes[0] == 0; }

/// The checked plan, or InvalidArgument with ATen's message.
inline Result<CatPlan> cat_plan(std::span<const CatOperand> in, int64_t dim) {
  if (in.empty()) return invalid("argument 'tensors' is an empty list, expected at least one tensor");
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].sizes.empty())
      return invalid("argument 'tensors': zero-dimensional tensor (at position " + std::to_string(i) +
                     ") cannot be concatenated");
  CatPlan plan;
  plan.dtype = in[0].dtype;
  for (const CatOperand& t : in) plan.dtype = promote_types(plan.dtype, t.dtype);
  plan.at.assign(in.size(), 0);
  const CatOperand* ref = nullptr;
  for (const CatOperand& t : in)
    if (!cat_skips(t.sizes)) {
      ref = &t;
      break;
    }
  if (ref == nullptr) {
    // ATen checks no dim here: only legacy empty tensors were given.
    plan.sizes = {0};
    plan.strides = {1};
    return plan;
  }
  const auto rank = static_cast<int64_t>(ref->sizes.size());
  KILN_ASSIGN_OR_RETURN(plan.dim, wrap_dim(dim, rank));
  const auto d = static_cast<size_t>(plan.dim);
  plan.sizes.assign(ref->sizes.begin(), ref->sizes.end());
  plan.sizes[d] = 0;
  // ATen's memory format rule: each input's suggested format; any
  // contiguous one (a skipped 1-d one included) or a disagreement gives
  // contiguous.
  bool channels_last = true;
  for (size_t i = 0; i < in.size(); ++i) {
    const CatOperand& t = in[i];
    channels_last = channels_last && strides_like_channels_last(t.sizes, t.strides);
    if (cat_skips(t.sizes)) continue;
    if (static_cast<int64_t>(t.sizes.size()) != rank)
      return invalid("argument 'tensors': tensors must have the same number of dimensions: got " +
                     std::to_string(rank) + " and " + std::to_string(t.sizes.size()) + " (tensor number " +
                     std::to_string(i) + ")");
    for (size_t j = 0; j < t.sizes.size(); ++j)
      if (j != d && t.sizes[j] != ref->sizes[j])
        return invalid("argument 'tensors': sizes of tensors must match except in dimension " +
                       std::to_string(d) + ". Expected size " + std::to_string(ref->sizes[j]) + " but got size " +
                       std::to_string(t.sizes[j]) + " for tensor number " + std::to_string(i) + " in the list");
    plan.at[i] = plan.sizes[d];
    plan.sizes[d] += t.sizes[d];
  }
  plan.strides = channels_last ? channels_last_strides(plan.sizes) : contiguous_strides(plan.sizes);
  return plan;
}

}  // namespace kiln::aoti
