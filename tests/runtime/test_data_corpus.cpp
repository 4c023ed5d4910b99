// The built-in generated corpus of the quickstart scenario.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/data/builtin_corpus.h"

namespace lowband::data {
namespace {

TEST(BuiltinCorpus, IsDeterministicAsciiOfAFewHundredKilobytes) {
  const std::string a = builtin_corpus();
  EXPECT_EQ(a, builtin_corpus());
  EXPECT_GE(a.size(), 400000u);
  EXPECT_LE(a.size(), 402000u);
  EXPECT_EQ(a.rfind("CHAPTER 1\n\n", 0), 0u);
  for (char c : a) ASSERT_TRUE(c == '\n' || (c >= 32 && c < 127)) << static_cast<int>(c);
}

TEST(BuiltinCorpus, HasStructureBeyondCharacterFrequencies) {
  // Byte models fitted on the first 90 % (add-one smoothing), scored on the last
  // 10 %: unigram H1 and bigram H2 in nats per byte. Expected for text with
  // structure: H1 well under uniform ln 256 = 5.55, and H2 clearly under H1
  // (a model that sees context does better; shuffled bytes would give H2 ~ H1).
  const std::string t = builtin_corpus();
  const size_t n = t.size(), n_train = n * 9 / 10;
  std::vector<double> uni(256, 1.0), bi(256 * 256, 1.0), row(256, 256.0);
  for (size_t i = 1; i < n_train; ++i) {
    const unsigned a = static_cast<uint8_t>(t[i - 1]), b = static_cast<uint8_t>(t[i]);
    uni[b] += 1;
    bi[a * 256 + b] += 1;
    row[a] += 1;
  }
  const double uni_total = 256.0 + static_cast<double>(n_train - 1);
  double h1 = 0, h2 = 0;
  for (size_t i = n_train; i < n; ++i) {
    const unsigned a = static_cast<uint8_t>(t[i - 1]), b = static_cast<uint8_t>(t[i]);
    h1 -= std::log(uni[b] / uni_total);
    h2 -= std::log(bi[a * 256 + b] / row[a]);
  }
  h1 /= static_cast<double>(n - n_train);
  h2 /= static_cast<double>(n - n_train);
  EXPECT_LT(h1, 0.6 * std::log(256.0));
  EXPECT_LT(h2, 0.75 * h1);
}

}  // namespace
}  // namespace lowband::data
