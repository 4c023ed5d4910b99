// Splits, training batches and validation batches.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/error.h"
#include "runtime/data/batch.h"

namespace lowband::data {
namespace {

// A stream whose id at position i is i mod 65536: a window's ids reveal its start.
std::vector<TokenId> positions(size_t n) {
  std::vector<TokenId> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<TokenId>(i & 0xFFFF);
  return t;
}

TEST(Split, LastFractionIsValidation) {
  // Expected sizes: validation = floor(n * fraction), train = the rest, in order.
  const std::vector<TokenId> t = positions(1005);
  const SplitTokens s = split_tokens(t);
  ASSERT_EQ(s.validation.size(), 100u);  // floor(100.5)
  ASSERT_EQ(s.train.size(), 905u);
  EXPECT_EQ(s.train.front(), 0);
  EXPECT_EQ(s.train.back(), 904);
  EXPECT_EQ(s.validation.front(), 905);
  EXPECT_EQ(s.validation.back(), 1004);
  EXPECT_EQ(split_tokens(t, 0.25).validation.size(), 251u);
  EXPECT_EQ(split_tokens(t, 0.0).validation.size(), 0u);
  EXPECT_EQ(split_tokens(t, 0.0).train.size(), 1005u);
  for (double bad : {-0.1, 1.0, std::nan("")}) EXPECT_THROW(split_tokens(t, bad), InputError) << bad;
}

TEST(TrainBatch, WindowsHoldInputsAndNextTokenTargets) {
  const std::vector<TokenId> t = positions(5000);
  const BatchShape shape{64, 8};
  const Batch b = train_batch(t, shape, 3, 11);
  ASSERT_EQ(b.starts.size(), 8u);
  ASSERT_EQ(b.inputs.size(), 8u * 64);
  ASSERT_EQ(b.targets.size(), 8u * 64);
  for (int row = 0; row < 8; ++row) {
    const int64_t s = b.starts[row];
    ASSERT_GE(s, 0);
    ASSERT_LE(s + 64, 4999);  // the last target is still in the stream
    for (int t_ = 0; t_ < 64; ++t_) {
      EXPECT_EQ(b.inputs[row * 64 + t_], s + t_);
      EXPECT_EQ(b.targets[row * 64 + t_], s + t_ + 1);
    }
  }
}

TEST(TrainBatch, SameSeedAndIndexGiveTheSameBatchInAnyOrder) {
  const size_t n = 100000;
  const BatchShape shape{128, 4};
  std::vector<std::vector<int64_t>> forward, backward(20);
  for (uint64_t k = 0; k < 20; ++k) forward.push_back(train_batch_starts(n, shape, 42, k));
  for (int k = 19; k >= 0; --k) backward[k] = train_batch_starts(n, shape, 42, k);
  EXPECT_EQ(forward, backward);
  // A resumed run asks for batch 17 first and still gets it.
  EXPECT_EQ(train_batch_starts(n, shape, 42, 17), forward[17]);
  // Other seeds and other indices give other windows.
  EXPECT_NE(train_batch_starts(n, shape, 43, 0), forward[0]);
  EXPECT_NE(forward[0], forward[1]);
}

TEST(TrainBatch, StartsArePinnedAcrossVersionsAndPlatforms) {
  // Expected: an independent Python implementation of splitmix64 with
  // state = mix(mix(seed) ^ k) and Lemire's bounded draw over n - seq_len starts.
  EXPECT_EQ(train_batch_starts(1000, {16, 4}, 1, 0), (std::vector<int64_t>{251, 86, 285, 557}));
  EXPECT_EQ(train_batch_starts(1000, {16, 4}, 1, 7), (std::vector<int64_t>{727, 5, 592, 695}));
  EXPECT_EQ(train_batch_starts(338025, {1024, 3}, 42, 123456), (std::vector<int64_t>{82881, 44150, 79788}));
}

TEST(TrainBatch, StartsAreUniformOverValidPositions) {
  // 10 valid starts (n - seq_len), 2000 batches of 5: each start expected 1000
  // times, standard deviation sqrt(10000 * 0.1 * 0.9) = 30; allow 5 sigma.
  const BatchShape shape{90, 5};
  std::vector<int> counts(10, 0);
  for (uint64_t k = 0; k < 2000; ++k)
    for (int64_t s : train_batch_starts(100, shape, 9, k)) {
      ASSERT_GE(s, 0);
      ASSERT_LT(s, 10);
      ++counts[s];
    }
  for (int c : counts) EXPECT_NEAR(c, 1000, 150);
}

TEST(TrainBatch, TooShortStreamsAndBadShapesAreErrors) {
  EXPECT_NO_THROW(train_batch_starts(65, {64, 1}, 1, 0));  // exactly one window
  EXPECT_EQ(train_batch_starts(65, {64, 3}, 1, 0), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_THROW(train_batch_starts(64, {64, 1}, 1, 0), InputError);
  EXPECT_THROW(train_batch_starts(1000, {0, 1}, 1, 0), InputError);
  EXPECT_THROW(train_batch_starts(1000, {16, 0}, 1, 0), InputError);
}

TEST(Validation, EvenlySpacedWindowsFromStartToEnd) {
  // n = 1001, seq_len = 100: floor(1000 / 100) = 10 windows, start_i = i * 900 / 9.
  EXPECT_EQ(validation_starts(1001, 100), (std::vector<int64_t>{0, 100, 200, 300, 400, 500, 600, 700, 800, 900}));
  EXPECT_EQ(validation_starts(1001, 100, 4), (std::vector<int64_t>{0, 300, 600, 900}));
  EXPECT_EQ(validation_starts(1001, 100, 1), (std::vector<int64_t>{0}));
  // n = 1050: 10 windows over 949 starts, floor(i * 949 / 9); none overlap, the
  // last one's final target is the stream's last token.
  const std::vector<int64_t> s = validation_starts(1050, 100);
  ASSERT_EQ(s.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(s[i], i * 949 / 9);
  for (int i = 1; i < 10; ++i) EXPECT_GE(s[i] - s[i - 1], 100);
  EXPECT_EQ(s.back() + 100, 1049);
}

TEST(Validation, BatchesCoverTheWindowsInOrder) {
  const std::vector<TokenId> t = positions(1001);
  const std::vector<Batch> batches = validation_batches(t, {100, 3});
  ASSERT_EQ(batches.size(), 4u);  // 10 windows in batches of 3: 3, 3, 3, 1
  EXPECT_EQ(batches[0].shape.batch_size, 3);
  EXPECT_EQ(batches[3].shape.batch_size, 1);
  EXPECT_EQ(batches[3].starts, (std::vector<int64_t>{900}));
  EXPECT_EQ(batches[1].inputs[0], 300);
  EXPECT_EQ(batches[1].targets[99], 400);
  // The same every time.
  EXPECT_EQ(validation_batches(t, {100, 3})[2].targets, batches[2].targets);
}

}  // namespace
}  // namespace lowband::data
