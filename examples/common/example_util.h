// Small helpers every example runner uses: strict integer parsing of command
// line and metadata text, wall-clock milliseconds, medians, zeroing a tensor
// on any device. Header-only.
#pragma once

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::examples {

using Clock = std::chrono::steady_clock;

/// Milliseconds from `start` to now.
inline double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// The whole of `text` as a decimal integer; false for empty text, trailing
/// characters or overflow.
inline bool parse_int(const std::string& text, int64_t* out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

/// The median of `values` (the mean of the middle two for an even count); 0
/// for none.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

/// Sets every element of `t` (on any device) to zero: zeroed host memory of its
/// shape and dtype, copied over it. Meant for caches cleared once per
/// generation, not for a hot loop.
inline Error zero_tensor(const Tensor& t) {
  KILN_ASSIGN_OR_RETURN(Tensor zeros, Tensor::empty(t.sizes(), t.dtype()));
  std::memset(zeros.data_ptr(), 0, zeros.nbytes());
  return copy_tensor(t, zeros);
}

}  // namespace kiln::examples
