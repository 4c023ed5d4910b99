// AdamW and gradient clipping against float64 references and closed forms.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "kernels/adamw.h"
#include "tests/kernels/reference.h"

namespace lowband::kernels {
namespace {

using namespace test;

struct State {
  std::vector<double> p, m, v;
};

// torch.optim.AdamW's update, float64.
void ref_adamw(State& s, const std::vector<double>& g, int64_t t, const AdamWConfig& c) {
  const double bc1 = 1.0 - std::pow(double(c.beta1), double(t));
  const double bc2 = 1.0 - std::pow(double(c.beta2), double(t));
  for (size_t i = 0; i < g.size(); ++i) {
    s.p[i] *= 1.0 - double(c.lr) * double(c.weight_decay);
    s.m[i] = c.beta1 * s.m[i] + (1.0 - c.beta1) * g[i];
    s.v[i] = c.beta2 * s.v[i] + (1.0 - c.beta2) * g[i] * g[i];
    s.p[i] -= c.lr * (s.m[i] / bc1) / (std::sqrt(s.v[i] / bc2) + c.eps);
  }
}

TEST(AdamW, ThreeStepsMatchFloat64Reference) {
  AdamWConfig config;
  config.lr = 0.1f;  // large so the update, not the parameter, dominates the error
  config.beta1 = 0.9f;
  config.beta2 = 0.99f;
  config.weight_decay = 0.1f;
  for (int64_t count : {1, 17, 100003}) {  // the last takes the threaded path
    for (int64_t first_step : {1, 1000}) {
      const uint64_t seed = fresh_seed();
      SCOPED_TRACE(seed_note(seed) + " count=" + std::to_string(count) +
                   " first_step=" + std::to_string(first_step));
      Rng rng(seed);
      auto p = random_floats(rng, size_t(count));
      auto m = random_floats(rng, size_t(count), -0.1f, 0.1f);
      auto v = random_floats(rng, size_t(count), 0.0f, 0.01f);
      State ref{to_double(p), to_double(m), to_double(v)};
      for (int64_t t = first_step; t < first_step + 3; ++t) {
        const auto g = random_floats(rng, size_t(count), -0.1f, 0.1f);
        cpu::adamw_step(p.data(), g.data(), m.data(), v.data(), count, t, config);
        ref_adamw(ref, to_double(g), t, config);
      }
      // Error measured against the size of an update: each step moves an element
      // by about lr, so lr·sqrt(count) is the norm of one update. (Relative to
      // p − p0 itself would be ill-conditioned: decay and steps can cancel.)
      double diff2 = 0.0;
      for (size_t i = 0; i < size_t(count); ++i)
        diff2 += (double(p[i]) - ref.p[i]) * (double(p[i]) - ref.p[i]);
      EXPECT_LT(std::sqrt(diff2) / (double(config.lr) * std::sqrt(double(count))), 1e-5);
      // m mixes the old moment and gradients of either sign and can cancel to
      // about 0 (count = 1 failed at 2.8e-5 relative): its error is measured
      // against the size of its terms, 0.1 (the range of m0 and g) per element.
      // v sums squares: no cancellation, relative as usual.
      double dm2 = 0.0;
      for (size_t i = 0; i < size_t(count); ++i)
        dm2 += (double(m[i]) - ref.m[i]) * (double(m[i]) - ref.m[i]);
      EXPECT_LT(std::sqrt(dm2) / (0.1 * std::sqrt(double(count))), 1e-5);
      EXPECT_LT(rel_error(v, ref.v), 1e-5);
    }
  }
}

// Closed form: at step 1 from m = v = 0 with no decay, m̂ = g and v̂ = g², so
// each parameter moves by lr · g / (|g| + eps) = lr · sign(g) (up to eps/|g|).
TEST(AdamW, FirstStepMovesEachParameterByLrTimesSignOfGradient) {
  AdamWConfig config;
  config.lr = 0.01f;
  const std::vector<float> g = {0.5f, -2.0f, 1e-3f, -7.0f};
  std::vector<float> p(4, 1.0f), m(4, 0.0f), v(4, 0.0f);
  cpu::adamw_step(p.data(), g.data(), m.data(), v.data(), 4, 1, config);
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(p[i], 1.0 - 0.01 * (g[i] > 0 ? 1.0 : -1.0), 1e-6) << i;
}

TEST(AdamW, StepBelowOneIsInputError) {
  float p = 0, g = 0, m = 0, v = 0;
  EXPECT_THROW(cpu::adamw_step(&p, &g, &m, &v, 1, 0, AdamWConfig{}), InputError);
}

TEST(GradNorm, MatchesFloat64AndClosedForm) {
  // Closed form: N ones have norm sqrt(N).
  const std::vector<float> ones(90001, 1.0f);
  EXPECT_NEAR(cpu::global_grad_norm(ones.data(), int64_t(ones.size())), std::sqrt(90001.0), 1e-9);
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const auto g = random_floats(rng, 200003);
  const double want = std::sqrt(dot(to_double(g), to_double(g)));
  EXPECT_NEAR(cpu::global_grad_norm(g.data(), int64_t(g.size())), want, 1e-12 * want);
}

TEST(GradNorm, ClipScalesToMaxNormOnlyWhenAbove) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  auto g = random_floats(rng, 70001);
  const double norm = cpu::global_grad_norm(g.data(), int64_t(g.size()));
  const auto before = g;
  // max_norm above the norm: untouched, returns the norm.
  EXPECT_DOUBLE_EQ(cpu::clip_grad_norm(g.data(), int64_t(g.size()), 2.0 * norm), norm);
  EXPECT_EQ(g, before);
  // max_norm below: scaled by max_norm / norm, so the new norm is max_norm and
  // the direction is unchanged.
  const double max_norm = 0.25 * norm;
  EXPECT_DOUBLE_EQ(cpu::clip_grad_norm(g.data(), int64_t(g.size()), max_norm), norm);
  EXPECT_NEAR(cpu::global_grad_norm(g.data(), int64_t(g.size())), max_norm, 1e-6 * max_norm);
  std::vector<double> want(before.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = before[i] * (max_norm / norm);
  EXPECT_LT(rel_error(g, want), 1e-6);
  EXPECT_THROW(cpu::clip_grad_norm(g.data(), 1, 0.0), InputError);
}

}  // namespace
}  // namespace lowband::kernels
