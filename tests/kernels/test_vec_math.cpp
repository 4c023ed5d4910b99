// The vectorisable math behind swiglu, cross_entropy (exp) and rope (sincos),
// against libm in double over their whole working ranges.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/cpu/vec_math.h"

namespace lowband::kernels::cpu::detail {
namespace {

// Cephes' polynomial and our reduction: a few ulp, i.e. under 3e-7 relative.
TEST(VecMath, ExpMatchesLibmToAFewUlp) {
  double worst = 0.0;
  for (float x = -87.0f; x < 88.0f; x += 0.00731f) {
    const double want = std::exp(double(x));
    worst = std::max(worst, std::abs(double(exp_f32(x)) - want) / want);
  }
  EXPECT_LT(worst, 3e-7);
  EXPECT_EQ(exp_f32(0.0f), 1.0f);
  // Clamped tails: tiny (not 0) below, finite above; NaN propagates.
  EXPECT_LT(exp_f32(-1000.0f), 1.3e-38f);  // e^-87.3 = 1.22e-38
  EXPECT_GE(exp_f32(-1000.0f), 0.0f);
  EXPECT_TRUE(std::isfinite(exp_f32(1000.0f)));
  EXPECT_TRUE(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
}

TEST(VecMath, SigmoidMatchesLibm) {
  double worst = 0.0;
  for (float x = -30.0f; x < 30.0f; x += 0.0037f) {
    const double want = 1.0 / (1.0 + std::exp(-double(x)));
    worst = std::max(worst, std::abs(double(sigmoid_f32(x)) - want) / want);
  }
  EXPECT_LT(worst, 5e-7);
}

// Angles up to 3e5 (RoPE positions times frequencies up to 1): error ~1e-15.
TEST(VecMath, SinCosMatchLibmInDouble) {
  double worst = 0.0;
  for (double a = -3e5; a < 3e5; a += 0.0731) {
    double s = 0.0, c = 0.0;
    sincos_f64(a, s, c);
    worst = std::max({worst, std::abs(s - std::sin(a)), std::abs(c - std::cos(a))});
  }
  EXPECT_LT(worst, 1e-13);
  double s = 1.0, c = 0.0;
  sincos_f64(0.0, s, c);
  EXPECT_EQ(s, 0.0);
  EXPECT_EQ(c, 1.0);
}

}  // namespace
}  // namespace lowband::kernels::cpu::detail
