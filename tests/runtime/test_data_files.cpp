// Token files (.u16) and loading datasets.
#include <gtest/gtest.h>

#include <filesystem>
#include <iterator>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/data/builtin_corpus.h"
#include "runtime/data/dataset.h"
#include "runtime/data/token_file.h"
#include "tests/runtime/test_data_support.h"

namespace lowband::data {
namespace {

using testing::ScratchDir;
using testing::write_bytes;
using Ids = std::vector<TokenId>;

// The place of the InputError that f throws ("" and a failure when none).
template <typename F>
std::string error_place(F f, std::string* message = nullptr) {
  try {
    f();
  } catch (const InputError& e) {
    if (message) *message = e.what();
    return e.place();
  }
  ADD_FAILURE() << "expected an InputError";
  return "";
}

TEST(TokenFile, RoundTripsAndIsLittleEndian) {
  const ScratchDir dir;
  const Ids ids = {0, 1, 255, 256, 0x0102, 50256, 65535};
  write_tokens(dir.file("t.u16"), ids);
  EXPECT_EQ(read_tokens(dir.file("t.u16")), ids);
  // Expected bytes: two per id, low byte first (0x0102 -> 02 01).
  EXPECT_EQ(std::filesystem::file_size(dir.file("t.u16")), 2 * ids.size());
  std::ifstream in(dir.file("t.u16"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.substr(8, 2), std::string("\x02\x01", 2));
  EXPECT_EQ(bytes.substr(12, 2), std::string("\xFF\xFF", 2));
  // No temporary file is left beside it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()), 1);
  write_tokens(dir.file("empty.u16"), {});
  EXPECT_TRUE(read_tokens(dir.file("empty.u16")).empty());
}

TEST(TokenFile, BadFilesNameTheFile) {
  const ScratchDir dir;
  EXPECT_EQ(error_place([&] { read_tokens(dir.file("missing.u16")); }), dir.file("missing.u16"));
  write_bytes(dir.file("odd.u16"), "abc");
  std::string message;
  EXPECT_EQ(error_place([&] { read_tokens(dir.file("odd.u16")); }, &message), dir.file("odd.u16"));
  EXPECT_NE(message.find("odd byte count (3)"), std::string::npos) << message;
  EXPECT_EQ(error_place([&] { write_tokens(dir.file("no/such/dir/t.u16"), {1}); }), dir.file("no/such/dir/t.u16"));
  EXPECT_TRUE(is_token_file("a/b.u16"));
  EXPECT_FALSE(is_token_file("a/b.u16.txt"));
  EXPECT_FALSE(is_token_file("u16"));
}

TEST(Dataset, TextFileWithTheByteTokenizerGivesItsBytes) {
  const ScratchDir dir;
  write_bytes(dir.file("c.txt"), "Hi \xC3\xA9!");
  const Dataset d = load_dataset(dir.file("c.txt"));
  EXPECT_EQ(d.tokens, (Ids{'H', 'i', ' ', 0xC3, 0xA9, '!'}));
  EXPECT_EQ(d.vocab_size, 256);
  EXPECT_FALSE(d.generated);
  EXPECT_EQ(d.source, dir.file("c.txt"));
}

TEST(Dataset, TokenFileIsReadAsItIsAndCheckedAgainstTheVocabulary) {
  const ScratchDir dir;
  write_tokens(dir.file("ids.u16"), {5, 50256, 7});
  DatasetOptions gpt2;
  gpt2.tokenizer = "gpt2";
  gpt2.gpt2_dir = dir.path() + "/not-needed-for-u16";
  EXPECT_EQ(load_dataset(dir.file("ids.u16"), gpt2).tokens, (Ids{5, 50256, 7}));
  EXPECT_EQ(load_dataset(dir.file("ids.u16"), gpt2).vocab_size, 50257);
  // 50256 is outside the byte vocabulary.
  std::string message;
  EXPECT_EQ(error_place([&] { load_dataset(dir.file("ids.u16")); }, &message), "training.data");
  EXPECT_NE(message.find("token 1 has id 50256"), std::string::npos) << message;
  write_bytes(dir.file("odd.u16"), "abc");
  EXPECT_EQ(error_place([&] { load_dataset(dir.file("odd.u16")); }), "training.data");
}

TEST(Dataset, ErrorsNameTheSetting) {
  const ScratchDir dir;
  EXPECT_EQ(error_place([&] { load_dataset(dir.file("missing.txt")); }), "training.data");
  write_bytes(dir.file("empty.txt"), "");
  EXPECT_EQ(error_place([&] { load_dataset(dir.file("empty.txt")); }), "training.data");
  write_bytes(dir.file("c.txt"), "text");
  DatasetOptions options;
  options.tokenizer = "gpt3";
  EXPECT_EQ(error_place([&] { load_dataset(dir.file("c.txt"), options); }), "training.tokenizer");
  // gpt2 on a text file without encoder.json/vocab.bpe where it is told to look.
  options.tokenizer = "gpt2";
  options.gpt2_dir = dir.path();
  std::string message;
  EXPECT_EQ(error_place([&] { load_dataset(dir.file("c.txt"), options); }, &message), "training.tokenizer");
  EXPECT_NE(message.find("encoder.json"), std::string::npos) << message;
}

TEST(Dataset, EmptyPathIsTheGeneratedCorpusAndSaysSo) {
  const Dataset d = load_dataset("");
  const std::string text = builtin_corpus();
  ASSERT_EQ(d.tokens.size(), text.size());
  for (size_t i = 0; i < text.size(); i += 997) EXPECT_EQ(d.tokens[i], static_cast<uint8_t>(text[i]));
  EXPECT_TRUE(d.generated);
  EXPECT_EQ(d.source, kBuiltinCorpusSource);
  EXPECT_NE(d.describe().find("GENERATED"), std::string::npos) << d.describe();
}

TEST(Dataset, ScenarioDataIsFoundBesideTheScenarioFile) {
  const ScratchDir dir;
  write_bytes(dir.file("corpus.txt"), "abcdef");
  Scenario s;
  s.source = dir.file("experiment.json");
  s.training.data = "corpus.txt";  // relative, and not in the current directory
  s.training.tokenizer = "byte";
  EXPECT_EQ(load_training_dataset(s).tokens, (Ids{'a', 'b', 'c', 'd', 'e', 'f'}));
  s.training.data = "";
  EXPECT_TRUE(load_training_dataset(s).generated);
}

}  // namespace
}  // namespace lowband::data
