// The two BPE merge procedures (bpe.h): rounds (the reference) and the heap.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <vector>

#include "runtime/data/bpe.h"

namespace lowband::data {
namespace {

using Ids = std::vector<TokenId>;

// A proper table over bytes 0..3 as BPE training makes one: each merge joins two
// existing tokens (bytes or earlier results) into a new token 4, 5, ...
BpeMergeTable random_proper_table(uint64_t seed, int n_merges) {
  uint64_t x = seed;
  const auto next = [&x] {  // splitmix64
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  BpeMergeTable table;
  TokenId next_token = 4;
  for (int r = 0; r < n_merges;) {
    const auto a = static_cast<TokenId>(next() % next_token), b = static_cast<TokenId>(next() % next_token);
    if (table.emplace(bpe_pair_key(a, b), BpeMerge{static_cast<uint32_t>(r), next_token}).second) {
      ++next_token;
      ++r;
    }
  }
  return table;
}

TEST(Bpe, HeapEqualsRoundsOnProperTables) {
  // Expected: identical output on every word (bpe.h's argument); checked on
  // 50 random tables x 40 random words of up to 300 symbols.
  int words = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const BpeMergeTable table = random_proper_table(seed, 40);
    uint64_t x = seed * 7919;
    for (int w = 0; w < 40; ++w) {
      Ids word(1 + (x = x * 6364136223846793005ull + 1442695040888963407ull) % 300);
      for (auto& t : word) t = static_cast<TokenId>((x = x * 6364136223846793005ull + 1) >> 62);
      Ids by_rounds = word, by_heap = word;
      bpe_merge_by_rounds(by_rounds, table);
      bpe_merge_with_heap(by_heap, table);
      ASSERT_EQ(by_heap, by_rounds) << "seed " << seed << " word " << w;
      ++words;
    }
  }
  EXPECT_EQ(words, 2000);
}

TEST(Bpe, RoundsMergeEveryOccurrenceBeforeANewLowerRankPair) {
  // Improper table: "ab a" (rank 0) uses "ab" before "a b" (rank 1) makes it.
  // Reference on "abab": round 1 can only merge a+b, at both places -> [ab, ab].
  // (Merging one occurrence at a time would give [aba, b]: why such tables use rounds.)
  const TokenId a = 0, b = 1, ab = 2, aba = 3;
  const BpeMergeTable table = {{bpe_pair_key(ab, a), {0, aba}}, {bpe_pair_key(a, b), {1, ab}}};
  Ids word = {a, b, a, b};
  bpe_merge_by_rounds(word, table);
  EXPECT_EQ(word, (Ids{ab, ab}));
}

TEST(Bpe, OverlappingPairsMergeLeftToRight) {
  // "aaaaa" with only a+a: expected [aa, aa, a] from both procedures.
  const BpeMergeTable table = {{bpe_pair_key(0, 0), {0, 1}}};
  Ids rounds(5, 0), heap(5, 0);
  bpe_merge_by_rounds(rounds, table);
  bpe_merge_with_heap(heap, table);
  EXPECT_EQ(rounds, (Ids{1, 1, 0}));
  EXPECT_EQ(heap, (Ids{1, 1, 0}));
  Ids single = {0};
  bpe_merge_with_heap(single, table);
  EXPECT_EQ(single, (Ids{0}));
}

}  // namespace
}  // namespace lowband::data
