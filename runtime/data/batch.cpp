#include "runtime/data/batch.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "runtime/data/splitmix.h"

namespace lowband::data {

namespace {

void check_shape(size_t n_tokens, BatchShape shape) {
  if (shape.seq_len <= 0) throw InputError("seq_len", "must be positive, got " + std::to_string(shape.seq_len));
  if (shape.batch_size <= 0)
    throw InputError("batch_size", "must be positive, got " + std::to_string(shape.batch_size));
  if (n_tokens < static_cast<size_t>(shape.seq_len) + 1)
    throw InputError("seq_len", "a window needs seq_len + 1 = " + std::to_string(shape.seq_len + 1) +
                                    " tokens, but the stream has " + std::to_string(n_tokens));
}

}  // namespace

SplitTokens split_tokens(const std::vector<TokenId>& tokens, double validation_fraction) {
  if (!(validation_fraction >= 0.0 && validation_fraction < 1.0))
    throw InputError("validation_fraction", "must be in [0, 1), got " + std::to_string(validation_fraction));
  const auto n_validation =
      static_cast<size_t>(std::floor(static_cast<double>(tokens.size()) * validation_fraction));
  const size_t n_train = tokens.size() - n_validation;
  return {std::vector<TokenId>(tokens.begin(), tokens.begin() + n_train),
          std::vector<TokenId>(tokens.begin() + n_train, tokens.end())};
}

std::vector<int64_t> train_batch_starts(size_t n_tokens, BatchShape shape, uint64_t seed, uint64_t k) {
  check_shape(n_tokens, shape);
  const uint64_t valid_starts = n_tokens - static_cast<uint64_t>(shape.seq_len);
  // mix64 is a bijection, so distinct k give distinct streams for one seed.
  SplitMix64 rng{mix64(mix64(seed) ^ k)};
  std::vector<int64_t> starts(shape.batch_size);
  for (auto& s : starts) s = static_cast<int64_t>(rng.below(valid_starts));
  return starts;
}

Batch train_batch(const std::vector<TokenId>& tokens, BatchShape shape, uint64_t seed, uint64_t k) {
  return make_batch(tokens, shape.seq_len, train_batch_starts(tokens.size(), shape, seed, k));
}

std::vector<int64_t> validation_starts(size_t n_tokens, int64_t seq_len, int64_t max_windows) {
  check_shape(n_tokens, {seq_len, 1});
  int64_t count = (static_cast<int64_t>(n_tokens) - 1) / seq_len;
  if (max_windows > 0 && max_windows < count) count = max_windows;
  const int64_t span = static_cast<int64_t>(n_tokens) - seq_len - 1;  // last valid start
  std::vector<int64_t> starts(count);
  for (int64_t i = 0; i < count; ++i) starts[i] = count == 1 ? 0 : i * span / (count - 1);
  return starts;
}

std::vector<Batch> validation_batches(const std::vector<TokenId>& tokens, BatchShape shape, int64_t max_windows) {
  check_shape(tokens.size(), shape);
  const std::vector<int64_t> starts = validation_starts(tokens.size(), shape.seq_len, max_windows);
  std::vector<Batch> batches;
  for (size_t i = 0; i < starts.size(); i += shape.batch_size) {
    const size_t end = std::min(starts.size(), i + shape.batch_size);
    batches.push_back(make_batch(tokens, shape.seq_len, std::vector<int64_t>(starts.begin() + i, starts.begin() + end)));
  }
  return batches;
}

Batch make_batch(const std::vector<TokenId>& tokens, int64_t seq_len, const std::vector<int64_t>& starts) {
  Batch b;
  b.shape = {seq_len, static_cast<int>(starts.size())};
  b.starts = starts;
  b.inputs.resize(starts.size() * seq_len);
  b.targets.resize(starts.size() * seq_len);
  for (size_t row = 0; row < starts.size(); ++row) {
    const int64_t s = starts[row];
    if (s < 0 || static_cast<size_t>(s + seq_len) >= tokens.size())
      throw InputError("starts[" + std::to_string(row) + "]",
                       "window [" + std::to_string(s) + ", " + std::to_string(s + seq_len + 1) +
                           ") is outside the " + std::to_string(tokens.size()) + "-token stream");
    for (int64_t t = 0; t < seq_len; ++t) {
      b.inputs[row * seq_len + t] = tokens[s + t];
      b.targets[row * seq_len + t] = tokens[s + t + 1];
    }
  }
  return b;
}

}  // namespace lowband::data
