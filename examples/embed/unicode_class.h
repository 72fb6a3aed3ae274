// The Unicode character properties the BERT basic tokenizer needs, from the
// tables in unicode_tables.inc (generated from Python's unicodedata, Unicode
// 14; the Hugging Face tokenizer uses Rust's tables, which can differ for
// characters added in later Unicode versions).
#pragma once

#include <string>

namespace kiln::embed {

/// General category C* (control, format, unassigned, private use).
bool is_other(char32_t c);
/// The White_Space property.
bool is_whitespace(char32_t c);
/// General category P*, or any ASCII symbol (BERT splits `$`, `+`, `^`, ... too).
bool is_punctuation(char32_t c);
/// CJK Unified Ideographs and compatibility ideographs (each becomes its own word).
bool is_cjk_ideograph(char32_t c);
/// Appends what `c` becomes after NFD decomposition, dropping non-spacing marks
/// (accents) and lowercasing; nothing for a mark itself. Per character: NFD's
/// canonical reordering only moves marks, which are dropped anyway.
void append_folded(char32_t c, std::u32string& out);

}  // namespace kiln::embed
