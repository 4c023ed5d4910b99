#pragma once
// Byte-pair merging of one pre-tokenised piece, given the merge table.
//
// The reference (OpenAI's encoder.py) works in rounds: find the adjacent pair
// with the lowest rank, merge it at every occurrence left to right, repeat. That
// costs O(n) per round, O(n^2) on long pieces (a 1 MB run of letters: minutes).
// The heap version merges one occurrence at a time in (rank, position) order,
// O(n log n). The two agree whenever the table is "proper", as one learned by
// BPE training is (GPT-2's is): each merge yields a new token, and its two parts
// are single bytes or tokens yielded by earlier merges. Then every pair a merge
// creates ranks after it, so no pair can jump ahead of the round in progress.
// For other tables use the rounds.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "runtime/data/tokenizer.h"

namespace lowband::data {

struct BpeMerge {
  uint32_t rank;    // 0 = merged first
  TokenId merged;   // the token the pair becomes
};
using BpeMergeTable = std::unordered_map<uint64_t, BpeMerge>;  // key: bpe_pair_key(left, right)

inline uint64_t bpe_pair_key(TokenId left, TokenId right) { return (uint64_t{left} << 16) | right; }

// Both rewrite `word` (token ids, initially one per byte) in place.
void bpe_merge_by_rounds(std::vector<TokenId>& word, const BpeMergeTable& merges);
void bpe_merge_with_heap(std::vector<TokenId>& word, const BpeMergeTable& merges);

}  // namespace lowband::data
