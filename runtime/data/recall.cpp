#include "runtime/data/recall.h"

#include <algorithm>
#include <set>
#include <string>

#include "common/error.h"
#include "runtime/data/splitmix.h"

namespace lowband::data {

namespace {

constexpr char kLetters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
constexpr int kDigitCount = 10;
constexpr int32_t kFiller = '.';
// A fused pair is one byte, 128 + key·10 + value, for keys a..l
// (kRecallFusedKeys): the lookup is then one attention hop (match the key, copy
// the value) instead of an induction head's two, which a small model learns
// within a few hundred steps.
constexpr int32_t kFusedBase = 128;

}  // namespace

void recall_record(const RecallShape& shape, uint64_t seed, RecallStream stream, uint64_t index,
                   std::vector<int32_t>& tokens, std::vector<AnswerKind>& answer) {
  const int64_t T = shape.seq_len, P = shape.pairs, kt = shape.key_tokens, vt = shape.value_tokens, q = kt + vt;
  const int64_t pq = shape.fused ? 1 : q;  // tokens per pair
  SplitMix64 rng{mix64(seed ^ mix64(uint64_t(stream) * 0xD1B54A32D192ED03ull + index))};
  tokens.assign(size_t(T + 1), kFiller);
  answer.assign(size_t(T), AnswerKind::none);

  // Distinct keys (a partial shuffle of the letters for one-letter keys).
  std::vector<std::vector<int32_t>> keys;
  if (kt == 1) {
    const int n = shape.fused ? kRecallFusedKeys : kRecallLetters;
    std::vector<int32_t> letters(kLetters, kLetters + n);
    for (int64_t i = 0; i < P; ++i) {
      std::swap(letters[size_t(i)], letters[size_t(i + int64_t(rng.below(uint64_t(n - i))))]);
      keys.push_back({letters[size_t(i)]});
    }
  } else {
    std::set<std::vector<int32_t>> seen;
    while (int64_t(keys.size()) < P) {
      std::vector<int32_t> key;
      for (int64_t j = 0; j < kt; ++j) key.push_back(kLetters[rng.below(kRecallLetters)]);
      if (seen.insert(key).second) keys.push_back(key);
    }
  }
  std::vector<std::vector<int32_t>> values(static_cast<size_t>(P));
  for (auto& v : values)
    for (int64_t j = 0; j < vt; ++j) v.push_back('0' + int32_t(rng.below(kDigitCount)));

  auto put = [&](int64_t at, int64_t pair) {
    for (int64_t j = 0; j < kt; ++j) tokens[size_t(at + j)] = keys[size_t(pair)][size_t(j)];
    for (int64_t j = 0; j < vt; ++j) tokens[size_t(at + kt + j)] = values[size_t(pair)][size_t(j)];
  };
  for (int64_t i = 0; i < P; ++i)
    if (shape.fused)
      tokens[size_t(i)] = kFusedBase + (keys[size_t(i)][0] - 'a') * kDigitCount + (values[size_t(i)][0] - '0');
    else
      put(i * q, i);

  // Queries back to back after the pairs, keys drawn uniformly (the tail that
  // no whole query fits, and the ends of chunks that one would straddle, stay
  // filler). A copy of a pair (its first or a query) is local to rank r when r
  // holds all its positions; an answer is remote when the rank predicting it
  // holds no earlier copy: only remote K/V carry it.
  auto owner_of = [&](int64_t p) { return p < T ? shape.owner[size_t(p)] : -1; };
  auto copy_rank = [&](int64_t at, int64_t length) {  // the rank holding all of a copy's positions, or -1
    for (int64_t j = 1; j < length; ++j)
      if (owner_of(at + j) != owner_of(at)) return -1;
    return owner_of(at);
  };
  std::vector<std::vector<int>> local_to(static_cast<size_t>(P));  // per pair: ranks holding a whole copy
  for (int64_t i = 0; i < P; ++i) local_to[size_t(i)].push_back(copy_rank(i * pq, pq));
  for (int64_t at = P * pq; at + q <= T + 1; at += q) {
    // No query straddles two ranks' chunks: a value alone at the start of a chunk
    // would hand its rank the answer of its next query without the key (with one
    // pair, all it needs). Filler instead, up to the chunk's start.
    while (at + q <= T && copy_rank(at, q) < 0) ++at;
    if (at + q > T + 1) break;
    const int64_t pair = int64_t(rng.below(uint64_t(P)));
    put(at, pair);
    std::vector<int>& holders = local_to[size_t(pair)];
    // The value's tokens are the targets of positions at + kt - 1 ...
    for (int64_t j = 0; j < vt; ++j) {
      const int64_t t = at + kt - 1 + j;
      const bool local = std::find(holders.begin(), holders.end(), shape.owner[size_t(t)]) != holders.end();
      answer[size_t(t)] = local ? AnswerKind::local : AnswerKind::remote;
    }
    holders.push_back(copy_rank(at, q));
  }
}

RecallBatch recall_batch(const RecallShape& shape, uint64_t seed, RecallStream stream, uint64_t first_index,
                         int batch_size) {
  RecallBatch out;
  const int64_t T = shape.seq_len;
  out.batch.shape = {T, batch_size};
  std::vector<int32_t> tokens;
  std::vector<AnswerKind> answer;
  for (int b = 0; b < batch_size; ++b) {
    recall_record(shape, seed, stream, first_index + uint64_t(b), tokens, answer);
    out.batch.starts.push_back(int64_t(first_index) + b);  // the record's index in its stream
    out.batch.inputs.insert(out.batch.inputs.end(), tokens.begin(), tokens.end() - 1);
    out.batch.targets.insert(out.batch.targets.end(), tokens.begin() + 1, tokens.end());
    out.answer.insert(out.answer.end(), answer.begin(), answer.end());
  }
  return out;
}

}  // namespace lowband::data
