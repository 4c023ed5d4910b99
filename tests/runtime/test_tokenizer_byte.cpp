// The byte tokenizer, GPT-2's pre-tokeniser and the code-point classes.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/data/pretokenize.h"
#include "runtime/data/tokenizer.h"
#include "runtime/data/unicode_class.h"

namespace lowband::data {
namespace {

TEST(ByteTokenizer, IdIsTheByteAndEveryByteRoundTrips) {
  const ByteTokenizer t;
  EXPECT_EQ(t.vocab_size(), 256);
  EXPECT_EQ(t.name(), "byte");
  // Expected: one id per byte, equal to the byte's unsigned value.
  EXPECT_EQ(t.encode("Hi\xC3\xA9"), (std::vector<TokenId>{72, 105, 0xC3, 0xA9}));
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes.push_back(static_cast<char>(b));
  const std::vector<TokenId> ids = t.encode(all_bytes);
  ASSERT_EQ(ids.size(), 256u);
  for (int b = 0; b < 256; ++b) EXPECT_EQ(ids[b], b);
  EXPECT_EQ(t.decode(ids), all_bytes);
  const std::string unicode = "Ελληνικά, Привет, 中文, 😀, e\xCC\x81";
  EXPECT_EQ(t.decode(t.encode(unicode)), unicode);
}

TEST(ByteTokenizer, DecodeRejectsIdsOutsideTheVocabulary) {
  const ByteTokenizer t;
  try {
    t.decode({65, 256});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "token 1");
  }
}

TEST(MakeTokenizer, UnknownNameIsAnErrorAtThePlaceGiven) {
  EXPECT_EQ(make_tokenizer("byte", {}, "training.tokenizer")->name(), "byte");
  try {
    make_tokenizer("gpt3", {}, "training.tokenizer");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "training.tokenizer");
  }
}

TEST(UnicodeClass, GeneralCategoriesOfSampleCodePoints) {
  // Expected, from Unicode's tables: L* letters, N* numbers, White_Space spaces.
  for (uint32_t cp : std::initializer_list<uint32_t>{'a', 'Z', 0xE9u /* é */, 0x3A9u /* Ω */, 0x436u /* ж */, 0x4E2Du /* 中 */, 0x1F0u /* ǰ */,
                      0x5D0u /* א */, 0x2C6u /* ˆ, Lm */})
    EXPECT_EQ(classify(cp), CodeClass::letter) << std::hex << cp;
  for (uint32_t cp : std::initializer_list<uint32_t>{'0', '9', 0xBDu /* ½ */, 0xB2u /* ² */, 0x2460u /* ① */, 0x216Bu /* Ⅻ */, 0x663u /* ٣ */})
    EXPECT_EQ(classify(cp), CodeClass::number) << std::hex << cp;
  for (uint32_t cp : std::initializer_list<uint32_t>{' ', '\t', '\n', '\r', 0x0Bu, 0x0Cu, 0x85u, 0xA0u, 0x2003u, 0x3000u})
    EXPECT_EQ(classify(cp), CodeClass::space) << std::hex << cp;
  // Not White_Space: the zero-width space and the information separator 0x1C;
  // combining marks (Mn) and emoji are neither letters nor numbers.
  for (uint32_t cp : std::initializer_list<uint32_t>{'!', '\'', 0x1Cu, 0x200Bu, 0x301u, 0x1F600u, 0x10FFFFu, 0xFFFFFFFFu})
    EXPECT_EQ(classify(cp), CodeClass::other) << std::hex << cp;
}

TEST(Utf8, DecodesValidAndRejectsInvalidSequences) {
  const std::string s = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80";  // a é 中 😀
  const char* p = s.data();
  const char* end = s.data() + s.size();
  const std::vector<std::pair<uint32_t, int>> expected = {{'a', 1}, {0xE9, 2}, {0x4E2D, 3}, {0x1F600, 4}};
  for (const auto& [cp, bytes] : expected) {
    const Utf8Char c = decode_utf8(p, end);
    EXPECT_EQ(c.code_point, cp);
    EXPECT_EQ(c.bytes, bytes);
    p += c.bytes;
  }
  // Invalid: a lone continuation byte, an overlong '/', a surrogate, a truncated sequence.
  for (const std::string bad : {"\x80", "\xC0\xAF", "\xED\xA0\x80", "\xE4\xB8"}) {
    const Utf8Char c = decode_utf8(bad.data(), bad.data() + bad.size());
    EXPECT_EQ(c.code_point, 0xFFFFFFFFu);
    EXPECT_EQ(c.bytes, 1);
  }
}

// Expected pieces: Python's regex.findall with GPT-2's pattern on the same text.
TEST(Gpt2Pretokenize, MatchesTheReferenceRegex) {
  using Pieces = std::vector<std::string_view>;
  EXPECT_EQ(gpt2_pretokenize("a   b\n\n c \t\n"), (Pieces{"a", "  ", " b", "\n\n", " c", " \t\n"}));
  EXPECT_EQ(gpt2_pretokenize("I'll say they're here, don't they'VE? 42nd x3 \xC2\xBD\xC2\xB2"),
            (Pieces{"I", "'ll", " say", " they", "'re", " here", ",", " don", "'t", " they", "'", "VE", "?", " 42",
                    "nd", " x", "3", " \xC2\xBD\xC2\xB2"}));
  // U+00A0 and U+3000 are white space but not the optional ASCII space of " ?\p{L}+".
  EXPECT_EQ(gpt2_pretokenize("\xC2\xA0x\xE3\x80\x80 y \xF0\x9F\x98\x80!!"),
            (Pieces{"\xC2\xA0", "x", "\xE3\x80\x80", " y", " \xF0\x9F\x98\x80!!"}));
  EXPECT_EQ(gpt2_pretokenize("\n\nFirst"), (Pieces{"\n", "\n", "First"}));
  EXPECT_EQ(gpt2_pretokenize("end  "), (Pieces{"end", "  "}));
  EXPECT_TRUE(gpt2_pretokenize("").empty());
}

TEST(Gpt2Pretokenize, PiecesConcatenateToTheText) {
  const std::string text = "Bad UTF-8 \xFF\xFE here, 'tis\r\n\tok\xE4\xB8 end";
  std::string joined;
  for (std::string_view piece : gpt2_pretokenize(text)) {
    EXPECT_FALSE(piece.empty());
    joined += piece;
  }
  EXPECT_EQ(joined, text);
}

}  // namespace
}  // namespace lowband::data
