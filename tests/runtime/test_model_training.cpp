// Training behaviour of model + optimiser: memorising a short sequence, and
// bitwise reproducibility from a seed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/model/model.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"

namespace lowband::model::test {
namespace {

ModelConfig small_config() {
  ModelConfig c;
  c.layers = 2;
  c.d_model = 32;
  c.heads = 4;
  c.kv_heads = 2;
  c.ffn_hidden = 64;
  c.vocab = 16;
  c.seq_len = 24;
  return c;
}

// One sequence of T+1 random tokens: inputs are the first T, targets the last T.
struct Sequence {
  std::vector<int32_t> inputs, targets;
};
Sequence random_sequence(std::mt19937_64& rng, int64_t T, int vocab) {
  std::uniform_int_distribution<int32_t> id(0, vocab - 1);
  std::vector<int32_t> s(size_t(T + 1));
  for (auto& x : s) x = id(rng);
  return {std::vector<int32_t>(s.begin(), s.end() - 1), std::vector<int32_t>(s.begin() + 1, s.end())};
}

TokenBatch batch_of(const Sequence& s) {
  TokenBatch b;
  b.inputs = s.inputs.data();
  b.targets = s.targets.data();
  b.tokens = int64_t(s.inputs.size());
  return b;
}

// Runs `steps` optimiser steps, each on the next sequence from `data`; returns the losses.
std::vector<float> train(Model& model, const std::vector<Sequence>& data, int steps,
                         const optim::LrSchedule& schedule, const optim::OptimizerConfig& oc) {
  optim::AdamW opt(model.layout(), oc);
  LocalAttention attention;
  std::vector<float> losses;
  for (int s = 1; s <= steps; ++s) {
    const Sequence& seq = data[size_t(s - 1) % data.size()];
    losses.push_back(model.forward_backward(batch_of(seq), attention));
    opt.step(model.params(), model.grads(), schedule.at(s));
  }
  return losses;
}

TEST(ModelTraining, MemorisesARepeatedSequence) {
  // Expectation: 24 random tokens over 16 symbols, the same sequence every step,
  // are learnable by position; 300 AdamW steps (lr 1e-2, warm-up 20, linear decay
  // to 1e-3, clip 1, no decay) drive the loss from ~ln 16 = 2.77 to below 0.05.
  std::mt19937_64 rng(2024);
  const ModelConfig c = small_config();
  const std::vector<Sequence> data{random_sequence(rng, c.seq_len, c.vocab)};
  Model model(c, 1);
  optim::LrSchedule schedule{1e-2, 20, 300, 0.1, optim::DecayShape::linear};
  optim::OptimizerConfig oc;
  const std::vector<float> losses = train(model, data, 300, schedule, oc);
  std::printf("memorisation: loss %.4f at step 1, %.5f at step 300\n", losses.front(), losses.back());
  EXPECT_NEAR(losses.front(), std::log(16.0), 0.1);
  EXPECT_LT(losses.back(), 0.05);
}

TEST(ModelTraining, SameSeedGivesBitwiseIdenticalLossesAndWeights) {
  // Expectation: two runs from seed 42 on the same batches give bit-identical
  // losses over 6 steps and identical final weights; seed 43 differs from step 1
  // (so the comparison can fail).
  std::mt19937_64 rng(7);
  const ModelConfig c = small_config();
  std::vector<Sequence> data;
  for (int i = 0; i < 3; ++i) data.push_back(random_sequence(rng, c.seq_len, c.vocab));
  optim::LrSchedule schedule{3e-3, 2, 6, 0.1, optim::DecayShape::cosine};
  optim::OptimizerConfig oc;
  oc.weight_decay = 0.1f;
  Model a(c, 42), b(c, 42), other(c, 43);
  const auto la = train(a, data, 6, schedule, oc);
  const auto lb = train(b, data, 6, schedule, oc);
  const auto lo = train(other, data, 6, schedule, oc);
  ASSERT_EQ(la.size(), 6u);
  EXPECT_EQ(0, std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(a.params(), b.params(), size_t(a.param_count()) * sizeof(float)));
  EXPECT_NE(la.front(), lo.front());
  EXPECT_LT(la[3], la[0]);  // step 4 sees step 1's sequence again, and has learnt
}

}  // namespace
}  // namespace lowband::model::test
