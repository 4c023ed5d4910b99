// The vectorisable math behind swiglu, cross_entropy, the attention softmax
// (exp) and rope (sincos), against libm in double over their whole working ranges.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

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
  // Tails: exactly 0 below -87.3 (masked softmax scores), finite above; NaN propagates.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(exp_f32(-1000.0f), 0.0f);
  EXPECT_EQ(exp_f32(-inf), 0.0f);
  EXPECT_GT(exp_f32(-87.0f), 0.0f);
  EXPECT_TRUE(std::isfinite(exp_f32(1000.0f)));
  EXPECT_TRUE(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
}

#if defined(__AVX512F__)
// The softmax's 16-lane exp is the same function: every lane bit-equal to the
// float version, tails and NaN included.
TEST(VecMath, ExpOn16LanesEqualsTheFloatVersion) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> xs = {-inf, -1000.0f, -87.31f, -87.29f, 88.29f, 88.31f, 1000.0f, inf, nan, 0.0f, -0.0f};
  for (float x = -95.0f; x < 95.0f; x += 0.0173f) xs.push_back(x);
  while (xs.size() % 16 != 0) xs.push_back(1.0f);
  for (size_t i = 0; i < xs.size(); i += 16) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, exp_f32(_mm512_loadu_ps(xs.data() + i)));
    for (size_t j = 0; j < 16; ++j) {
      const float want = exp_f32(xs[i + j]);
      EXPECT_EQ(std::memcmp(&lanes[j], &want, sizeof(float)), 0)
          << "x = " << xs[i + j] << ": lane " << lanes[j] << ", float " << want;
    }
  }
}
#endif

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
