#include "unicode_class.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace kiln::embed {
namespace {

struct CodeRange {
  char32_t first;
  char32_t last;
};

struct Folding {
  char32_t from;
  uint8_t length;
  char32_t to[3];
};

#include "unicode_tables.inc"

template <size_t N>
bool in_ranges(const CodeRange (&ranges)[N], char32_t c) {
  const auto* it = std::upper_bound(std::begin(ranges), std::end(ranges), c,
                                    [](char32_t value, const CodeRange& r) { return value < r.first; });
  return it != std::begin(ranges) && c <= std::prev(it)->last;
}

// Hangul syllables decompose algorithmically (Unicode 3.12) into leading
// consonant, vowel and optional trailing consonant jamo.
constexpr char32_t kHangulFirst = 0xAC00;
constexpr char32_t kHangulLast = 0xD7A3;

}  // namespace

bool is_other(char32_t c) { return in_ranges(kOtherRanges, c); }

bool is_whitespace(char32_t c) { return in_ranges(kWhitespaceRanges, c); }

bool is_punctuation(char32_t c) {
  const bool ascii_symbol = (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
                            (c >= 123 && c <= 126);
  return ascii_symbol || in_ranges(kPunctuationRanges, c);
}

bool is_cjk_ideograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

void append_folded(char32_t c, std::u32string& out) {
  if (c >= kHangulFirst && c <= kHangulLast) {
    const char32_t index = c - kHangulFirst;
    out.push_back(0x1100 + index / 588);
    out.push_back(0x1161 + (index % 588) / 28);
    if (index % 28 != 0) out.push_back(0x11A7 + index % 28);
    return;
  }
  if (in_ranges(kMarkRanges, c)) return;
  const auto* it = std::lower_bound(std::begin(kFoldings), std::end(kFoldings), c,
                                    [](const Folding& f, char32_t value) { return f.from < value; });
  if (it != std::end(kFoldings) && it->from == c) {
    out.append(it->to, it->length);
  } else {
    out.push_back(c);
  }
}

}  // namespace kiln::embed
