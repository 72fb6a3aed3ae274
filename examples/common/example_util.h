// Small helpers every example runner uses: strict integer parsing of command
// line and metadata text, and wall-clock milliseconds. Header-only.
#pragma once

#include <charconv>
#include <chrono>
#include <cstdint>
#include <string>
#include <system_error>

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

}  // namespace kiln::examples
