#include "wordpiece.h"

#include <fstream>

#include "utf8.h"

namespace kiln::embed {

std::optional<WordPieceVocabulary> WordPieceVocabulary::load(const std::string& path, std::string* error) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    *error = "cannot open vocabulary file '" + path + "'";
    return std::nullopt;
  }
  WordPieceVocabulary vocab;
  std::string line;
  int32_t id = 0;
  while (std::getline(file, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // A repeated token keeps its first id, as the Hugging Face loader does.
    vocab.ids_.emplace(line, id);
    ++id;
  }
  if (vocab.ids_.empty()) {
    *error = "vocabulary file '" + path + "' is empty";
    return std::nullopt;
  }
  return vocab;
}

std::optional<int32_t> WordPieceVocabulary::find(std::string_view token) const {
  auto it = ids_.find(std::string(token));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

void wordpiece_split(const std::u32string& word, const WordPieceVocabulary& vocab, int32_t unknown_id,
                     std::vector<int32_t>& out) {
  if (word.size() > kMaxWordChars) {
    out.push_back(unknown_id);
    return;
  }
  // UTF-8 of the word with the byte offset of every character boundary, so
  // candidate pieces are byte ranges.
  std::string utf8;
  std::vector<size_t> boundary{0};
  for (char32_t c : word) {
    append_utf8(c, utf8);
    boundary.push_back(utf8.size());
  }
  const size_t first_piece = out.size();
  std::string candidate;
  size_t start = 0;
  while (start < word.size()) {
    std::optional<int32_t> match;
    size_t end = word.size();
    for (; end > start; --end) {
      candidate.assign(start == 0 ? "" : "##");
      candidate.append(utf8, boundary[start], boundary[end] - boundary[start]);
      if ((match = vocab.find(candidate))) break;
    }
    if (!match) {
      out.resize(first_piece);
      out.push_back(unknown_id);
      return;
    }
    out.push_back(*match);
    start = end;
  }
}

}  // namespace kiln::embed
