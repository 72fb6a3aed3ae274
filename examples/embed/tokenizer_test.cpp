// Unit tests of the kiln-embed tokenizer on hand-made vocabularies; the
// comparison with the Hugging Face tokenizer on the real vocabulary is in
// tests/python/test_embed_example.py.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "basic_tokenizer.h"
#include "bert_tokenizer.h"
#include "common/temp_dir.h"
#include "utf8.h"
#include "wordpiece.h"

namespace kiln::embed {
namespace {

std::vector<std::string> words_utf8(std::string_view text) {
  std::vector<std::string> out;
  for (const auto& word : basic_tokenize(text)) {
    std::string s;
    for (char32_t c : word) append_utf8(c, s);
    out.push_back(s);
  }
  return out;
}

// A vocab.txt (id = line number) written for one test and removed after it.
class TempVocab {
 public:
  explicit TempVocab(const std::vector<std::string>& tokens) : path_(dir_.file("vocab.txt")) {
    std::ofstream file(path_);
    for (const auto& t : tokens) file << t << "\n";
  }
  const std::string& path() const { return path_; }

 private:
  kiln::testing_util::TempDir dir_{"kiln-embed-vocab"};
  std::string path_;
};

TEST(Utf8, DecodesValidSequencesAndReplacesInvalidOnes) {
  EXPECT_EQ(decode_utf8("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), (std::u32string{U'a', 0xE9, 0x20AC, 0x1F600}));
  EXPECT_EQ(decode_utf8("\xFF" "a"), (std::u32string{kReplacementChar, U'a'}));           // invalid lead byte
  EXPECT_EQ(decode_utf8("\xE2\x82"), (std::u32string{kReplacementChar}));                 // truncated
  EXPECT_EQ(decode_utf8("\xC0\xAF"), (std::u32string{kReplacementChar}));                 // overlong '/'
  EXPECT_EQ(decode_utf8("\xED\xA0\x80" "b"), (std::u32string{kReplacementChar, U'b'}));   // surrogate
  std::string round_trip;
  for (char32_t c : std::u32string{U'a', 0xE9, 0x20AC, 0x1F600}) append_utf8(c, round_trip);
  EXPECT_EQ(round_trip, "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
}

TEST(BasicTokenizer, LowercasesStripsAccentsAndSplitsPunctuation) {
  EXPECT_EQ(words_utf8("H\xC3\xA9llo, WORLD!"), (std::vector<std::string>{"hello", ",", "world", "!"}));
  // Decomposed accent (e + U+0301) and the precomposed one give the same word.
  EXPECT_EQ(words_utf8("cafe\xCC\x81 caf\xC3\xA9"), (std::vector<std::string>{"cafe", "cafe"}));
  // ASCII symbols count as punctuation, as in BERT.
  EXPECT_EQ(words_utf8("a$b+c"), (std::vector<std::string>{"a", "$", "b", "+", "c"}));
}

TEST(BasicTokenizer, CleansControlCharactersAndWhitespace) {
  // U+0001 is dropped (joining the halves), tab/newline/U+3000 separate words.
  EXPECT_EQ(words_utf8("a\x01" "b\tc\nd\xE3\x80\x80" "e"), (std::vector<std::string>{"ab", "c", "d", "e"}));
  EXPECT_TRUE(basic_tokenize("  \t\n ").empty());
}

TEST(BasicTokenizer, SplitsCjkIdeographsAndDecomposesHangul) {
  EXPECT_EQ(words_utf8("\xE6\x9D\xB1\xE4\xBA\xAC" "abc"),  // 東京abc
            (std::vector<std::string>{"\xE6\x9D\xB1", "\xE4\xBA\xAC", "abc"}));
  // 한 (U+D55C) = jamo U+1112 U+1161 U+11AB.
  const auto words = basic_tokenize("\xED\x95\x9C");
  ASSERT_EQ(words.size(), 1u);
  EXPECT_EQ(words[0], (std::u32string{0x1112, 0x1161, 0x11AB}));
}

TEST(WordPiece, GreedyLongestMatchWithContinuationPrefix) {
  std::string error;
  auto vocab = WordPieceVocabulary::load(TempVocab({"[UNK]", "un", "##aff", "##able", "una", "##ff"}).path(), &error);
  ASSERT_TRUE(vocab) << error;
  std::vector<int32_t> ids;
  // "una" is the longest first piece, then "##ff", "##able".
  wordpiece_split(U"unaffable", *vocab, 0, ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{4, 5, 3}));
  ids.clear();
  wordpiece_split(U"unxable", *vocab, 0, ids);  // "##x..." matches nothing: the whole word is unknown
  EXPECT_EQ(ids, (std::vector<int32_t>{0}));
  ids.clear();
  wordpiece_split(std::u32string(kMaxWordChars + 1, U'u'), *vocab, 0, ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{0}));
}

TEST(BertTokenizer, AddsSpecialTokensTruncatesAndPads) {
  std::string error;
  auto tokenizer = BertTokenizer::load(TempVocab({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b", "c", "!"}).path(), &error);
  ASSERT_TRUE(tokenizer) << error;
  EXPECT_EQ(tokenizer->encode("A b!", 16), (std::vector<int32_t>{2, 4, 5, 7, 3}));
  EXPECT_EQ(tokenizer->encode("a b c a b c", 4), (std::vector<int32_t>{2, 4, 5, 3}));
  EXPECT_EQ(tokenizer->encode("zzz", 16), (std::vector<int32_t>{2, 1, 3}));
  EXPECT_EQ(tokenizer->encode("", 16), (std::vector<int32_t>{2, 3}));

  const TokenBatch batch = tokenizer->pad({{2, 4, 3}, {2, 4, 5, 6, 3}});
  EXPECT_EQ(batch.batch, 2);
  EXPECT_EQ(batch.seq, 5);
  EXPECT_EQ(batch.input_ids, (std::vector<int64_t>{2, 4, 3, 0, 0, 2, 4, 5, 6, 3}));
  EXPECT_EQ(batch.attention_mask, (std::vector<int64_t>{1, 1, 1, 0, 0, 1, 1, 1, 1, 1}));
}

TEST(BertTokenizer, RefusesMissingOrNonBertVocabularies) {
  std::string error;
  EXPECT_FALSE(BertTokenizer::load("/nonexistent/vocab.txt", &error));
  EXPECT_NE(error.find("/nonexistent/vocab.txt"), std::string::npos);
  EXPECT_FALSE(BertTokenizer::load(TempVocab({"a", "b"}).path(), &error));
  EXPECT_NE(error.find("[CLS]"), std::string::npos);
}

}  // namespace
}  // namespace kiln::embed
