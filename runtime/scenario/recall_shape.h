#pragma once
// The shape of the keyed-recall task (training.data_source "recall";
// runtime/data/recall.h generates its records): how many pairs fit the first
// context rank's block, and which rank owns each position. Derived from the
// scenario alone, so that the scenario's validation can check it without the
// generator.
#include <cstdint>
#include <vector>

#include "runtime/scenario/scenario.h"

namespace lowband {

// Keys are letters (52) or, fused with their one-digit value into one byte, a..l.
constexpr int kRecallLetters = 52;
constexpr int kRecallFusedKeys = 12;

struct RecallShape {
  int64_t seq_len = 0;
  int pairs = 0;         // key→value pairs per sequence (0: as many as fit)
  int key_tokens = 1;    // letters per key (52 choices each)
  int value_tokens = 1;  // digits per value (10 choices each)
  bool fused = false;    // a pair is one byte 128 + key·10 + value (keys a..l), queries as text
  // (seq_len): the context rank whose forward pass predicts target t (owns input
  // position t). All zero: one rank, every answer local.
  std::vector<int> owner;
};

// Which rank owns each of seq_len positions under the scenario's context split
// (contiguous: T/P each; zigzag: chunks r and 2P-1-r of T/(2P)).
std::vector<int> context_owners(const Scenario& s);

// The shape for a scenario (training.recall_*), pairs resolved. InputError at
// training.recall_pairs (or _key_tokens) when they do not fit the first block.
RecallShape recall_shape(const Scenario& s);

// The leading positions the first rank holds: where the pairs must fit.
int64_t recall_pair_block(const RecallShape& shape);

}  // namespace lowband
