#include "runtime/scenario/recall_shape.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace lowband {
namespace {

double key_space(int key_tokens, bool fused) {
  if (fused) return kRecallFusedKeys;
  double n = 1;
  for (int i = 0; i < key_tokens; ++i) n *= kRecallLetters;
  return n;
}

}  // namespace

std::vector<int> context_owners(const Scenario& s) {
  const int64_t T = s.model.seq_len;
  const int P = std::max(1, s.parallel.context);
  std::vector<int> owner(size_t(T), 0);
  if (P == 1) return owner;
  for (int64_t t = 0; t < T; ++t) {
    if (s.parallel.split == CpSplit::contiguous) {
      owner[size_t(t)] = int(t / (T / P));
    } else {
      const int64_t chunk = t / (T / (2 * P));
      owner[size_t(t)] = int(chunk < P ? chunk : 2 * P - 1 - chunk);
    }
  }
  return owner;
}

int64_t recall_pair_block(const RecallShape& shape) {
  int64_t b = 0;
  while (b < shape.seq_len && shape.owner[size_t(b)] == shape.owner[0]) ++b;
  return b;
}

RecallShape recall_shape(const Scenario& s) {
  RecallShape shape;
  shape.seq_len = s.model.seq_len;
  shape.key_tokens = s.training.recall_key_tokens;
  shape.value_tokens = s.training.recall_value_tokens;
  shape.owner = context_owners(s);
  shape.fused = s.training.recall_form == "fused";
  if (shape.fused && (shape.key_tokens != 1 || shape.value_tokens != 1))
    throw InputError(shape.key_tokens != 1 ? "training.recall_key_tokens" : "training.recall_value_tokens",
                     "recall_form \"fused\" packs one letter and one digit into a byte: expected 1");
  const int64_t q = shape.key_tokens + shape.value_tokens;  // tokens per query
  const int64_t pq = shape.fused ? 1 : q;                   // tokens per pair
  const int64_t block = recall_pair_block(shape);
  // Pairs in the first block, queries after them: 2·pairs·q ≤ seq_len.
  const int64_t fit = std::min<int64_t>(block / pq, shape.seq_len / (2 * q));
  const int64_t keys = int64_t(std::min(key_space(shape.key_tokens, shape.fused), 1e9));
  const int64_t most = std::min(fit, keys);
  const int64_t pairs = s.training.recall_pairs > 0 ? s.training.recall_pairs : most;
  if (pairs < 1 || pairs > most)
    throw InputError("training.recall_pairs",
                     std::to_string(pairs) + " pairs of " + std::to_string(pq) + " tokens do not fit: at most " +
                         std::to_string(most) + " (the first context block holds " + std::to_string(block) +
                         " of model.seq_len " + std::to_string(shape.seq_len) + " tokens, the queries as many again; " +
                         std::to_string(keys) + " distinct keys)");
  shape.pairs = int(pairs);
  return shape;
}

}  // namespace lowband
