#include "bert_tokenizer.h"

#include <algorithm>

#include "basic_tokenizer.h"

namespace kiln::embed {

std::optional<BertTokenizer> BertTokenizer::load(const std::string& vocab_path, std::string* error) {
  auto vocab = WordPieceVocabulary::load(vocab_path, error);
  if (!vocab) return std::nullopt;
  BertTokenizer tokenizer(std::move(*vocab));
  struct Special {
    const char* token;
    int32_t* id;
  };
  for (const Special& s : {Special{"[CLS]", &tokenizer.cls_id_}, Special{"[SEP]", &tokenizer.sep_id_},
                           Special{"[PAD]", &tokenizer.pad_id_}, Special{"[UNK]", &tokenizer.unk_id_}}) {
    auto id = tokenizer.vocab_.find(s.token);
    if (!id) {
      *error = "vocabulary file '" + vocab_path + "' has no " + s.token + " token (not a BERT vocabulary?)";
      return std::nullopt;
    }
    *s.id = *id;
  }
  return tokenizer;
}

std::vector<int32_t> BertTokenizer::encode(std::string_view text, size_t max_length) const {
  std::vector<int32_t> ids{cls_id_};
  const size_t limit = std::max<size_t>(max_length, 2) - 1;  // room left for [SEP]
  for (const std::u32string& word : basic_tokenize(text)) {
    wordpiece_split(word, vocab_, unk_id_, ids);
    if (ids.size() >= limit) break;
  }
  if (ids.size() > limit) ids.resize(limit);
  ids.push_back(sep_id_);
  return ids;
}

TokenBatch BertTokenizer::pad(const std::vector<std::vector<int32_t>>& sequences) const {
  TokenBatch batch;
  batch.batch = static_cast<int64_t>(sequences.size());
  for (const auto& s : sequences) batch.seq = std::max<int64_t>(batch.seq, static_cast<int64_t>(s.size()));
  batch.input_ids.assign(static_cast<size_t>(batch.batch * batch.seq), pad_id_);
  batch.attention_mask.assign(batch.input_ids.size(), 0);
  for (size_t row = 0; row < sequences.size(); ++row) {
    for (size_t col = 0; col < sequences[row].size(); ++col) {
      const size_t at = row * static_cast<size_t>(batch.seq) + col;
      batch.input_ids[at] = sequences[row][col];
      batch.attention_mask[at] = 1;
    }
  }
  return batch;
}

}  // namespace kiln::embed
