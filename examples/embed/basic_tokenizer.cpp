#include "basic_tokenizer.h"

#include "unicode_class.h"
#include "utf8.h"

namespace kiln::embed {
namespace {

bool is_kept_control(char32_t c) { return c == U'\t' || c == U'\n' || c == U'\r'; }

// Steps 1-3: one normalised string where word boundaries are spaces, except
// around punctuation (split in step 4).
std::u32string normalize(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (char32_t c : decode_utf8(text)) {
    if (c == 0 || c == kReplacementChar || (is_other(c) && !is_kept_control(c))) continue;
    if (is_whitespace(c)) {
      out.push_back(U' ');
    } else if (is_cjk_ideograph(c)) {
      out.push_back(U' ');
      out.push_back(c);
      out.push_back(U' ');
    } else {
      append_folded(c, out);
    }
  }
  return out;
}

}  // namespace

std::vector<std::u32string> basic_tokenize(std::string_view text) {
  std::vector<std::u32string> words;
  std::u32string current;
  auto flush = [&] {
    if (!current.empty()) words.push_back(std::move(current));
    current.clear();
  };
  for (char32_t c : normalize(text)) {
    // Folding never produces whitespace but can produce punctuation, so both
    // are tested on the normalised characters.
    if (is_whitespace(c)) {
      flush();
    } else if (is_punctuation(c)) {
      flush();
      words.emplace_back(1, c);
    } else {
      current.push_back(c);
    }
  }
  flush();
  return words;
}

}  // namespace kiln::embed
