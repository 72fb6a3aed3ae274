// The whole BERT tokenizer of an uncased model: basic tokenization, WordPiece,
// then [CLS] pieces [SEP] truncated to a maximum length; and the padded batch
// (input_ids, attention_mask) a BERT encoder takes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wordpiece.h"

namespace kiln::embed {

/// Row-major [batch, seq] int64 arrays, padded with the pad id / mask 0.
struct TokenBatch {
  int64_t batch = 0;
  int64_t seq = 0;
  std::vector<int64_t> input_ids;
  std::vector<int64_t> attention_mask;
};

class BertTokenizer {
 public:
  /// Loads vocab.txt and finds [CLS], [SEP], [PAD] and [UNK] in it.
  static std::optional<BertTokenizer> load(const std::string& vocab_path, std::string* error);

  /// Token ids of one text: [CLS], the first max_length - 2 pieces, [SEP].
  /// max_length must be at least 2.
  std::vector<int32_t> encode(std::string_view text, size_t max_length) const;

  /// Pads encoded sequences to the longest of them.
  TokenBatch pad(const std::vector<std::vector<int32_t>>& sequences) const;

  const WordPieceVocabulary& vocabulary() const noexcept { return vocab_; }

 private:
  explicit BertTokenizer(WordPieceVocabulary vocab) : vocab_(std::move(vocab)) {}

  WordPieceVocabulary vocab_;
  int32_t cls_id_ = 0;
  int32_t sep_id_ = 0;
  int32_t pad_id_ = 0;
  int32_t unk_id_ = 0;
};

}  // namespace kiln::embed
