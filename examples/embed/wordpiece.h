// WordPiece: a vocabulary (the model's own vocab.txt, one token per line, id =
// line number) and the greedy longest-match-first split of one word into
// pieces, continuation pieces carrying the "##" prefix.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kiln::embed {

class WordPieceVocabulary {
 public:
  /// Reads vocab.txt; nullopt with `error` naming the file and the problem.
  static std::optional<WordPieceVocabulary> load(const std::string& path, std::string* error);

  std::optional<int32_t> find(std::string_view token) const;
  size_t size() const noexcept { return ids_.size(); }

 private:
  // Heterogeneous lookup needs C++20's transparent unordered_map hashing,
  // which libstdc++ 12 lacks; tokens are short, so find() builds a string.
  std::unordered_map<std::string, int32_t> ids_;
};

/// Words longer than this (in characters) become the unknown token, as in BERT.
inline constexpr size_t kMaxWordChars = 100;

/// Appends the ids of `word`'s pieces to `out`, or `unknown_id` once if the
/// word is too long or some part of it matches no piece.
void wordpiece_split(const std::u32string& word, const WordPieceVocabulary& vocab, int32_t unknown_id,
                     std::vector<int32_t>& out);

}  // namespace kiln::embed
