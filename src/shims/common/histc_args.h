// The arguments of histc checked as every device checks them (a floating
// self, a bin count memory can hold, min not above max) and the wording of
// the edges in messages. The devices differ in how they find the data's own
// range and in when they may read it back, so the range checks that follow
// it stay with them, sharing only range_not_finite's message. The CPU's
// histogram and histogramdd take the same bin-count rule.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "shims/common/shim_util.h"

namespace kiln::aoti::hist {

/// More bins than any memory holds; refused before bins + 1 edges are
/// counted or the counts allocated.
inline constexpr int64_t kMaxBins = int64_t{1} << 48;

/// An edge as messages print it: the shortest of fixed and exponent form.
inline std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// Error unless 0 < bins <= kMaxBins; `what` follows the count in the
/// message (" for dimension 1", or empty).
inline Error bins_in_range(int64_t bins, const std::string& what) {
  if (bins <= 0) return invalid("argument 'bins' is " + std::to_string(bins) + what + ", expected > 0");
  if (bins > kMaxBins)
    return invalid("argument 'bins' is " + std::to_string(bins) + what + ", more than memory can hold");
  return Error::Ok;
}

/// histc's arguments before any data is read: self of a floating dtype
/// (float16, bfloat16, float32, float64), a bin count in range, and
/// min <= max.
inline Error histc_args(DType self, int64_t bins, double min, double max) {
  if (self != DType::Float16 && self != DType::BFloat16 && self != DType::Float32 && self != DType::Float64)
    return invalid(std::string("argument 'self' has dtype ") + dtype_name(self) +
                   ", which histc does not support (floating dtypes only)");
  KILN_RETURN_IF_ERROR(bins_in_range(bins, ""));
  if (min > max) return invalid("argument 'max' (" + num(max) + ") is below 'min' (" + num(min) + ")");
  return Error::Ok;
}

/// The error for outer edges [lo, hi] that are not both finite.
inline Error range_not_finite(double lo, double hi) {
  return invalid("the range [" + num(lo) + ", " + num(hi) + "] is not finite");
}

}  // namespace kiln::aoti::hist
