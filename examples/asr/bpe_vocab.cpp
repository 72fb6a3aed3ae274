#include "bpe_vocab.h"

#include <array>
#include <fstream>

namespace kiln::asr {
namespace {

bool printable_as_itself(int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255); }

// Code point -> byte for code points below 512 (all the mapping uses).
std::array<int, 512> make_table() {
  std::array<int, 512> table{};
  table.fill(-1);
  int next = 256;
  for (int b = 0; b < 256; ++b) table[static_cast<size_t>(printable_as_itself(b) ? b : next++)] = b;
  return table;
}

// Decodes one UTF-8 sequence at text[*pos]; -1 for a malformed one.
int64_t next_code_point(const std::string& text, size_t* pos) {
  const auto c = static_cast<unsigned char>(text[*pos]);
  int extra = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
  if (extra < 0 || *pos + static_cast<size_t>(extra) >= text.size()) return -1;  // *pos < size() on entry
  int64_t cp = extra == 0 ? c : c & (0x3F >> extra);
  for (int i = 1; i <= extra; ++i) {
    const auto cc = static_cast<unsigned char>(text[*pos + static_cast<size_t>(i)]);
    if ((cc >> 6) != 0x2) return -1;
    cp = (cp << 6) | (cc & 0x3F);
  }
  *pos += static_cast<size_t>(extra) + 1;
  return cp;
}

}  // namespace

int byte_of_code_point(uint32_t code_point) {
  static const std::array<int, 512> table = make_table();
  return code_point < table.size() ? table[code_point] : -1;
}

bool BpeVocab::load(const std::string& path, std::string* error) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    *error = path + ": cannot open the vocabulary file";
    return false;
  }
  bytes_.clear();
  std::string line;
  while (std::getline(file, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string decoded;
    bool special = line.size() > 4 && line.compare(0, 2, "<|") == 0 && line.compare(line.size() - 2, 2, "|>") == 0;
    for (size_t pos = 0; !special && pos < line.size();) {
      const int64_t cp = next_code_point(line, &pos);
      const int b = cp < 0 ? -1 : byte_of_code_point(static_cast<uint32_t>(cp));
      if (b < 0) {
        *error = path + ": line " + std::to_string(bytes_.size() + 1) + " ('" + line +
                 "') is not a byte-level BPE token (a character outside GPT-2's byte mapping)";
        return false;
      }
      decoded.push_back(static_cast<char>(b));
    }
    bytes_.push_back(special ? line : decoded);
  }
  if (bytes_.empty()) {
    *error = path + ": the vocabulary file is empty";
    return false;
  }
  return true;
}

std::string BpeVocab::decode(const std::vector<int64_t>& ids, int64_t first_special) const {
  std::string text;
  for (int64_t id : ids) {
    if (id < 0 || id >= first_special || static_cast<size_t>(id) >= bytes_.size()) continue;
    text += bytes_[static_cast<size_t>(id)];
  }
  return text;
}

}  // namespace kiln::asr
