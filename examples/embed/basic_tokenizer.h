// BERT's "basic" tokenization of uncased models, as the Hugging Face fast
// tokenizer does it for all-MiniLM-L6-v2 (BertNormalizer + BertPreTokenizer):
//   1. cleaning: drop NUL, U+FFFD and control/format characters; any
//      whitespace becomes a space;
//   2. CJK ideographs become words of their own;
//   3. accents stripped (NFD, non-spacing marks dropped) and lowercased;
//   4. split on whitespace; every punctuation character is its own word.
// Limits: special tokens written in the text ("[SEP]") are not recognised as
// such, and the Unicode tables are version 14 (see unicode_class.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln::embed {

/// The words of UTF-8 `text` after normalisation, in order.
std::vector<std::u32string> basic_tokenize(std::string_view text);

}  // namespace kiln::embed
