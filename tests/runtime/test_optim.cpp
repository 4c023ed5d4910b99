// Learning-rate schedule values, and the AdamW wrapper: decay on matrices only,
// clipping to the global norm, and the closed form of a first step.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/error.h"
#include "runtime/model/param_layout.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"

namespace lowband::optim {
namespace {

TEST(LrSchedule, LinearWarmupThenLinearDecayToFloor) {
  // Expectation (peak 1e-3, warm-up 10, 110 steps, floor 0.1·peak = 1e-4):
  // step 1 → 1e-4, 5 → 5e-4, 10 → 1e-3; step 60 is half-way through the decay:
  // 1e-4 + 9e-4·0.5 = 5.5e-4; step 110 → 1e-4, and it stays there (step 500).
  const LrSchedule s{1e-3, 10, 110, 0.1, DecayShape::linear};
  EXPECT_DOUBLE_EQ(s.at(1), 1e-4);
  EXPECT_DOUBLE_EQ(s.at(5), 5e-4);
  EXPECT_DOUBLE_EQ(s.at(10), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(60), 5.5e-4);
  EXPECT_DOUBLE_EQ(s.at(85), 1e-4 + 9e-4 * 0.25);
  EXPECT_DOUBLE_EQ(s.at(110), 1e-4);
  EXPECT_DOUBLE_EQ(s.at(500), 1e-4);
}

TEST(LrSchedule, CosineDecayAndNoWarmup) {
  // Expectation: cosine, step 35 (p = 0.25): 1e-4 + 9e-4·(1 + cos(π/4))/2 =
  // 8.68198e-4; step 60 (p = 0.5): 5.5e-4. Without warm-up step 1 is already
  // into the decay: p = 1/100 → 1e-3 - 9e-4·0.01 = 9.91e-4 (linear).
  const LrSchedule c{1e-3, 10, 110, 0.1, DecayShape::cosine};
  EXPECT_NEAR(c.at(35), 1e-4 + 9e-4 * (1 + std::cos(M_PI / 4)) / 2, 1e-15);
  EXPECT_NEAR(c.at(35), 8.68198e-4, 1e-9);
  EXPECT_NEAR(c.at(60), 5.5e-4, 1e-15);
  const LrSchedule n{1e-3, 0, 100, 0.1, DecayShape::linear};
  EXPECT_DOUBLE_EQ(n.at(1), 9.91e-4);
}

TEST(LrSchedule, BadValuesNameTheKey) {
  const LrSchedule s{1e-3, 10, 110, 0.1, DecayShape::linear};
  EXPECT_THROW(s.at(0), InputError);
  LrSchedule bad = s;
  bad.min_lr_ratio = 1.5;
  try {
    bad.validate();
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "training.min_lr_ratio");
  }
  TrainingConfig t;
  t.steps = 0;
  EXPECT_THROW(lr_schedule_from(t), InputError);
  t = TrainingConfig{};
  t.grad_clip = -1;
  EXPECT_THROW(optimizer_config_from(t), InputError);
}

ModelConfig opt_config() {
  ModelConfig c;
  c.layers = 2;
  c.d_model = 8;
  c.heads = 2;
  c.kv_heads = 1;
  c.ffn_hidden = 12;
  c.vocab = 5;
  return c;
}

TEST(OptimAdamW, WeightDecayOnMatricesOnlyNotNorms) {
  // Expectation: with zero gradients the Adam term is 0 (m = v = 0), so a step
  // at lr 0.1 with weight decay 0.5 multiplies every matrix entry by exactly
  // 1 - 0.05 (in fp32) and leaves every norm gain unchanged.
  const model::ParamLayout layout(opt_config());
  std::vector<float> p(size_t(layout.count())), g(p.size(), 0.0f);
  for (size_t i = 0; i < p.size(); ++i) p[i] = 0.5f + 0.001f * float(i);
  const std::vector<float> p0 = p;
  OptimizerConfig oc;
  oc.weight_decay = 0.5f;
  oc.grad_clip = 0;
  AdamW opt(layout, oc);
  opt.step(p.data(), g.data(), 0.1);
  const float factor = 1.0f - 0.1f * 0.5f;
  for (const auto& t : layout.tensors())
    for (int64_t i = 0; i < t.count(); ++i) {
      const size_t j = size_t(t.offset + i);
      ASSERT_EQ(p[j], t.decays() ? p0[j] * factor : p0[j]) << t.name << "[" << i << "]";
    }
}

TEST(OptimAdamW, ClipsToGlobalNormAndFirstStepMovesEachWeightByLr) {
  // Expectation: gradients all -2 over N floats have norm 2·sqrt(N); clipping at
  // 1 returns that norm and leaves the gradients with norm 1. The first AdamW
  // step has m̂ = g, v̂ = g², so each weight moves by lr·g/(|g| + eps) = +lr
  // (no decay), to fp32 rounding.
  const model::ParamLayout layout(opt_config());
  const size_t n = size_t(layout.count());
  std::vector<float> p(n, 0.25f), g(n, -2.0f);
  OptimizerConfig oc;
  oc.grad_clip = 1.0;
  AdamW opt(layout, oc);
  const StepStats st = opt.step(p.data(), g.data(), 1e-3);
  EXPECT_EQ(st.step, 1);
  EXPECT_NEAR(st.grad_norm, 2.0 * std::sqrt(double(n)), 1e-9 * double(n));
  double norm2 = 0;
  for (float x : g) norm2 += double(x) * x;
  EXPECT_NEAR(std::sqrt(norm2), 1.0, 1e-6);
  for (size_t i = 0; i < n; ++i) ASSERT_NEAR(p[i], 0.25f + 1e-3f, 1e-7f) << i;
  EXPECT_EQ(opt.steps_taken(), 1);
}

}  // namespace
}  // namespace lowband::optim
