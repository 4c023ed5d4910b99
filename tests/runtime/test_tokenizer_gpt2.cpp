// GPT-2 BPE: the real vocabulary (committed in data/) against the reference
// encodings, and a tiny synthetic vocabulary for
// the merge order and the file errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/data/gpt2_files.h"
#include "runtime/data/gpt2_tokenizer.h"
#include "runtime/data/token_file.h"
#include "tests/runtime/test_data_support.h"

namespace lowband::data {
namespace {

using testing::ScratchDir;
using testing::data_dir;
using Ids = std::vector<TokenId>;

class Gpt2Real : public ::testing::Test {
 protected:
  // The GPT-2 files are committed (data/): missing ones are a failure, not a skip.
  static void SetUpTestSuite() {
    tokenizer_ = std::make_unique<Gpt2Tokenizer>(
        Gpt2Files{data_dir() + "/gpt2_encoder.json", data_dir() + "/gpt2_vocab.bpe"});
  }
  static void TearDownTestSuite() { tokenizer_.reset(); }
  static std::unique_ptr<Gpt2Tokenizer> tokenizer_;
};
std::unique_ptr<Gpt2Tokenizer> Gpt2Real::tokenizer_;

TEST_F(Gpt2Real, ReproducesTinyShakespeareIdForId) {
  // Expected: the shipped test vector, 338,025 ids.
  const Ids expected = read_tokens(data_dir() + "/tinyshakespeare.gpt2.u16");
  ASSERT_EQ(expected.size(), 338025u);
  std::ifstream in(data_dir() + "/tinyshakespeare.txt", std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Ids got = tokenizer_->encode(text);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expected[i]) << "first difference at id " << i;
  EXPECT_EQ(tokenizer_->decode(got), text);
}

TEST_F(Gpt2Real, EndOfTextTreatmentGivesThePublishedCorpusCount) {
  // Expected: 1,587,446 tokens, the count published in data/README.md
  // for gutenberg_nltk13.txt, whose 13 books are joined by 12 <|endoftext|> lines.
  // Taken as text instead, each separator would cost 7 tokens, not 1 (1,587,518).
  const std::string path = data_dir() + "/gutenberg_nltk13.txt";
  std::ifstream in(path, std::ios::binary);
  if (!in) GTEST_SKIP() << path << " not found (scripts/get-data.sh fetches it)";
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Ids ids = tokenizer_->encode(text);
  EXPECT_EQ(ids.size(), 1587446u);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), Gpt2Tokenizer::kEndOfText), 12);
}

// Expected ids: OpenAI's encoder.py algorithm (Python, `regex` module) on the same strings.
TEST_F(Gpt2Real, KnownEncodings) {
  EXPECT_EQ(tokenizer_->vocab_size(), 50257);
  EXPECT_EQ(tokenizer_->encode("Hello world"), (Ids{15496, 995}));
  EXPECT_EQ(tokenizer_->encode("I'll say they're here, don't they'VE?"),
            (Ids{40, 1183, 910, 484, 821, 994, 11, 836, 470, 484, 6, 6089, 30}));
  EXPECT_EQ(tokenizer_->encode("a   b\n\n c \t\n"), (Ids{64, 220, 220, 275, 628, 269, 220, 197, 198}));
  EXPECT_EQ(tokenizer_->encode("caf\xC3\xA9 \xCE\x95\xCE\xBB\xCE\xBB\xCE\xB7\xCE\xBD\xCE\xB9\xCE\xBA\xCE\xAC "
                               "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xE4\xB8\xAD\xE6\x96\x87 "
                               "\xE2\x91\xA0\xC2\xBD\xC2\xB2"),  // café Ελληνικά Привет 中文 ①½²
            (Ids{66, 1878, 2634, 7377, 243, 39377, 39377, 138, 115, 26180, 29945, 43000, 138, 105, 12466, 253, 21169,
                 18849, 38857, 16843, 20375, 220, 40792, 23877, 229, 2343, 239, 254, 23141, 31185}));
  EXPECT_EQ(tokenizer_->encode("\xC2\xA0x\xE3\x80\x80 y \xF0\x9F\x98\x80!!"),
            (Ids{1849, 87, 5099, 222, 331, 30325, 222, 3228}));
  EXPECT_TRUE(tokenizer_->encode("").empty());
}

TEST_F(Gpt2Real, EndOfTextIsOneSpecialToken) {
  // As tiktoken with allowed_special="all" (this is how the shared corpora were
  // counted: gutenberg_nltk13.txt's 12 separators give its published 1,587,446).
  EXPECT_EQ(tokenizer_->encode(" <|endoftext|>"), (Ids{220, 50256}));
  EXPECT_EQ(tokenizer_->encode("First Citizen:\n<|endoftext|>\nSecond"),
            (Ids{5962, 22307, 25, 198, 50256, 198, 12211}));
  EXPECT_EQ(tokenizer_->encode("<|endoftext|><|endoftext|>"), (Ids{50256, 50256}));
  // As plain text (encode_ordinary), the same string is seven ordinary tokens.
  EXPECT_EQ(tokenizer_->encode_ordinary(" <|endoftext|>"), (Ids{1279, 91, 437, 1659, 5239, 91, 29}));
  EXPECT_EQ(tokenizer_->decode({50256}), "<|endoftext|>");
}

TEST_F(Gpt2Real, DecodeInvertsEncodeOnUnicodeAndInvalidUtf8) {
  for (const std::string text :
       {"Ελληνικά, Привет мир, 中文字, العربية, עברית, हिन्दी", "emoji 😀🎉 and e\xCC\x81 combining",
        "tabs\tand\r\nCRLF   and trailing spaces   ", "bytes \xFF\xFE\x80 that are not UTF-8", "<|endoftext|>x"}) {
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode(text)), text);
    EXPECT_EQ(tokenizer_->decode(tokenizer_->encode_ordinary(text)), text);
  }
}

TEST_F(Gpt2Real, DecodeRejectsIdsOutsideTheVocabulary) {
  try {
    tokenizer_->decode({15496, 50257});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "token 1");
  }
}

// OpenAI's bytes_to_unicode, written out again here as UTF-8 strings.
std::vector<std::string> byte_strings() {
  std::vector<std::string> out(256);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    const int cp = printable ? b : next++;
    if (cp < 0x80) out[b] = std::string(1, static_cast<char>(cp));
    else out[b] = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
  }
  return out;
}

// A vocabulary of the 256 bytes (id = byte) plus "he" 256, "ll" 257, "hell" 258, "Ġh" 259.
void write_tiny_vocabulary(const ScratchDir& dir, const std::string& merges) {
  nlohmann::json encoder = nlohmann::json::object();
  const std::vector<std::string> bytes = byte_strings();
  for (int b = 0; b < 256; ++b) encoder[bytes[b]] = b;
  encoder["he"] = 256;
  encoder["ll"] = 257;
  encoder["hell"] = 258;
  encoder["\xC4\xA0h"] = 259;  // "Ġh": space + h
  testing::write_bytes(dir.file("encoder.json"), encoder.dump());
  testing::write_bytes(dir.file("vocab.bpe"), merges);
}

TEST(Gpt2Tiny, MergesLowestRankFirstAtEveryOccurrence) {
  const ScratchDir dir;
  write_tiny_vocabulary(dir, "#version: 0.2\nl l\nh e\nhe ll\n\xC4\xA0 h\n");
  const Gpt2Tokenizer t({dir.file("encoder.json"), dir.file("vocab.bpe")});
  EXPECT_EQ(t.vocab_size(), 260);
  // "hello": l+l (rank 0), then h+e (rank 1), then he+ll -> [hell, o].
  EXPECT_EQ(t.encode("hello"), (Ids{258, 'o'}));
  // "llll": both "l l" pairs merge in one pass, left to right.
  EXPECT_EQ(t.encode("lllll"), (Ids{257, 257, 'l'}));
  // " hello": the leading space belongs to the piece; "Ġ h" has the worst rank, so
  // "h e" and "he ll" win first and Ġ stays alone.
  EXPECT_EQ(t.encode(" hello"), (Ids{' ', 258, 'o'}));
  EXPECT_EQ(t.encode(" h"), (Ids{259}));
  EXPECT_EQ(t.decode({259, 258, 'o'}), " hhello");
}

TEST(Gpt2Tiny, BadFilesNameTheFileAndLine) {
  try {
    Gpt2Tokenizer({"/nonexistent/encoder.json", "/nonexistent/vocab.bpe"});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "/nonexistent/encoder.json");
  }
  const ScratchDir dir;
  write_tiny_vocabulary(dir, "#version: 0.2\nl l\nh e x\n");
  try {
    Gpt2Tokenizer({dir.file("encoder.json"), dir.file("vocab.bpe")});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), dir.file("vocab.bpe") + ":3");
  }
  write_tiny_vocabulary(dir, "#version: 0.2\nq q\n");  // "qq" is not in the vocabulary
  EXPECT_THROW(Gpt2Tokenizer({dir.file("encoder.json"), dir.file("vocab.bpe")}), InputError);
  testing::write_bytes(dir.file("encoder.json"), "{\"a\": 0,");
  try {
    Gpt2Tokenizer({dir.file("encoder.json"), dir.file("vocab.bpe")});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), dir.file("encoder.json"));
  }
}

TEST(Gpt2Files, SearchOrderAndErrors) {
  const ScratchDir dir;
  write_tiny_vocabulary(dir, "#version: 0.2\nl l\n");
  const std::string data = dir.file("corpus.txt");
  // Expected order: next to the data file first, then the repository's data/.
  const std::vector<std::string> dirs = gpt2_search_dirs(data);
  ASSERT_GE(dirs.size(), 2u);
  EXPECT_EQ(dirs[0], dir.path());
  EXPECT_EQ(dirs[1], data_dir());
  EXPECT_EQ(find_gpt2_files(data, "", "training.tokenizer").encoder_json, dir.file("encoder.json"));
  // An explicit directory is the only place looked in.
  EXPECT_EQ(gpt2_search_dirs(data, "/somewhere"), (std::vector<std::string>{"/somewhere"}));
  try {
    find_gpt2_files(data, dir.path() + "/missing", "--gpt2-dir");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "--gpt2-dir");
    EXPECT_NE(std::string(e.what()).find(dir.path() + "/missing"), std::string::npos);
  }
}

}  // namespace
}  // namespace lowband::data
