#pragma once
// Splits and batches. A batch holds batch_size windows of seq_len + 1 tokens:
// the first seq_len are the inputs, the last seq_len (shifted by one) the
// next-token targets.
//
// Training batch k is a pure function of (token count, shape, seed, k): its
// window starts come from a counter-based generator keyed by seed and k
// (splitmix64, with unbiased bounded draws), so batch k is the same whatever
// was drawn before (a resumed run gets the same batches) and on every platform
// (no std::uniform_int_distribution, whose output is library-specific).
#include <cstdint>
#include <vector>

#include "runtime/data/tokenizer.h"

namespace lowband::data {

struct BatchShape {
  int64_t seq_len = 0;
  int batch_size = 0;
};

struct Batch {
  BatchShape shape;
  std::vector<int64_t> starts;   // (batch_size) where each window starts in the stream
  std::vector<int32_t> inputs;   // (batch_size, seq_len) row-major: tokens[start + t]
  std::vector<int32_t> targets;  // (batch_size, seq_len): tokens[start + t + 1]
};

// The last fraction of the tokens is held out for validation:
// validation size = floor(n * validation_fraction), the rest is train.
struct SplitTokens {
  std::vector<TokenId> train;
  std::vector<TokenId> validation;
};
// InputError naming "validation_fraction" unless 0 <= fraction < 1.
SplitTokens split_tokens(const std::vector<TokenId>& tokens, double validation_fraction = 0.1);

// Window starts of training batch k: batch_size draws, uniform over the
// n_tokens - seq_len valid starts. InputError when the stream is shorter than
// seq_len + 1 or the shape is not positive.
std::vector<int64_t> train_batch_starts(size_t n_tokens, BatchShape shape, uint64_t seed, uint64_t k);
Batch train_batch(const std::vector<TokenId>& tokens, BatchShape shape, uint64_t seed, uint64_t k);

// Validation windows: count = min(max_windows, floor((n - 1) / seq_len)) (all
// that fit when max_windows <= 0), evenly spaced: start_i = floor(i * (n - seq_len
// - 1) / (count - 1)), so the first starts at 0, the last ends at the stream's end
// and none overlap. The same every time.
std::vector<int64_t> validation_starts(size_t n_tokens, int64_t seq_len, int64_t max_windows = 0);
// Those windows in batches of shape.batch_size (the last batch may be smaller).
std::vector<Batch> validation_batches(const std::vector<TokenId>& tokens, BatchShape shape,
                                      int64_t max_windows = 0);

// The batch of windows at the given starts (each start + seq_len < tokens.size()).
Batch make_batch(const std::vector<TokenId>& tokens, int64_t seq_len, const std::vector<int64_t>& starts);

}  // namespace lowband::data
