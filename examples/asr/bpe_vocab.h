// Whisper's vocabulary (GPT-2 style byte-level BPE): one token per line, the
// line number is the id. Each token is written with GPT-2's byte-to-printable
// mapping (e.g. a space is "Ġ"); decoding maps the characters back to bytes
// and concatenates them, so multi-byte UTF-8 characters split across tokens
// come out whole.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::asr {

class BpeVocab {
 public:
  /// Reads `path`; false with *error naming the file and the problem.
  bool load(const std::string& path, std::string* error);
  size_t size() const { return bytes_.size(); }
  /// Bytes of the text of `ids`, in order. Ids >= `first_special` (Whisper's
  /// <|endoftext|> and the control tokens after it) are left out.
  std::string decode(const std::vector<int64_t>& ids, int64_t first_special) const;

 private:
  std::vector<std::string> bytes_;  // decoded bytes of each token
};

/// GPT-2's byte <-> printable code point table: bytes that are printable and
/// not whitespace map to themselves; the other 68 map to 256, 257, ... in
/// byte order. Returns the byte for `code_point`, or -1 if it has none.
int byte_of_code_point(uint32_t code_point);

}  // namespace kiln::asr
