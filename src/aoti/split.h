// Splitting the comma- and line-separated lists of method metadata.
#pragma once

#include <string_view>
#include <vector>

namespace kiln::aoti {

/// The parts of `text` between each `sep`, empty parts included ("a,,b" ->
/// "a", "", "b"; "" -> one empty part). Views into `text`.
inline std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

}  // namespace kiln::aoti
