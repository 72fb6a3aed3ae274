// UTF-8 <-> code points for the tokenizer. Invalid or truncated sequences
// decode to U+FFFD, which the tokenizer's text cleaning then drops (as the
// Hugging Face tokenizer drops U+FFFD).
#pragma once

#include <string>
#include <string_view>

namespace kiln::embed {

inline constexpr char32_t kReplacementChar = 0xFFFD;

std::u32string decode_utf8(std::string_view text);
void append_utf8(char32_t code_point, std::string& out);

}  // namespace kiln::embed
