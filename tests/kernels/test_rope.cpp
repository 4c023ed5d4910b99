// RoPE ("rotate half") forward and backward against a float64 reference, at
// large explicit positions (context-parallel chunks sit far into the sequence).
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "kernels/rope.h"
#include "tests/kernels/reference.h"

namespace lowband::kernels {
namespace {

using namespace test;

// Rotates by sign * angle, all in float64.
std::vector<double> ref_rope(const std::vector<double>& x, const std::vector<int64_t>& pos,
                             int64_t n, int64_t heads, int64_t hd, double theta, double sign) {
  std::vector<double> out(x.size());
  const int64_t half = hd / 2;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < half; ++i) {
        const double angle = double(pos[size_t(t)]) * std::pow(theta, -2.0 * double(i) / double(hd));
        const double c = std::cos(angle), s = sign * std::sin(angle);
        const size_t base = size_t((t * heads + h) * hd);
        const double x1 = x[base + size_t(i)], x2 = x[base + size_t(i + half)];
        out[base + size_t(i)] = x1 * c - x2 * s;
        out[base + size_t(i + half)] = x2 * c + x1 * s;
      }
  return out;
}

struct Shape {
  int64_t n, heads, head_dim;
};

std::vector<int64_t> random_positions(Rng& rng, int64_t n, int64_t max_pos) {
  std::uniform_int_distribution<int64_t> dist(0, max_pos);
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (auto& v : p) v = dist(rng);
  return p;
}

TEST(Rope, ForwardAndBackwardMatchFloat64Reference) {
  for (double theta : {10000.0, 500000.0}) {
    for (Shape s : {Shape{1, 1, 2}, Shape{5, 3, 18}, Shape{7, 2, 64}, Shape{40, 8, 128}}) {
      const uint64_t seed = fresh_seed();
      SCOPED_TRACE(seed_note(seed) + " head_dim=" + std::to_string(s.head_dim) +
                   " theta=" + std::to_string(theta));
      Rng rng(seed);
      const auto x = random_floats(rng, size_t(s.n * s.heads * s.head_dim));
      const auto pos = random_positions(rng, s.n, 200000);
      std::vector<float> out(x.size());
      poison(out);
      cpu::rope_forward(x.data(), pos.data(), s.n, s.heads, s.head_dim, out.data(), float(theta));
      EXPECT_LT(rel_error(out, ref_rope(to_double(x), pos, s.n, s.heads, s.head_dim, theta, 1.0)), 1e-5);
      // Backward is the transpose of the rotation, i.e. the rotation by -angle.
      std::vector<float> dx(x.size());
      poison(dx);
      cpu::rope_backward(x.data(), pos.data(), s.n, s.heads, s.head_dim, dx.data(), float(theta));
      EXPECT_LT(rel_error(dx, ref_rope(to_double(x), pos, s.n, s.heads, s.head_dim, theta, -1.0)), 1e-5);
    }
  }
}

TEST(Rope, BackwardMatchesFiniteDifferences) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const int64_t n = 3, heads = 2, hd = 6;
  const auto x = random_floats(rng, size_t(n * heads * hd));
  const auto G = random_floats(rng, x.size());
  const auto pos = random_positions(rng, n, 5000);
  const auto numeric = numeric_gradient(
      [&](const std::vector<double>& xv) {
        return dot(to_double(G), ref_rope(xv, pos, n, heads, hd, 10000.0, 1.0));
      },
      to_double(x));
  std::vector<float> dx(x.size());
  poison(dx);
  cpu::rope_backward(G.data(), pos.data(), n, heads, hd, dx.data());
  EXPECT_LT(rel_error(dx, numeric), 1e-5);
}

// Position 0 is the identity; in place, forward then backward restores x.
TEST(Rope, PositionZeroIsIdentityAndBackwardInvertsInPlace) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const int64_t n = 50, heads = 4, hd = 96;
  const auto x = random_floats(rng, size_t(n * heads * hd));
  const std::vector<int64_t> zeros(size_t(n), 0);
  std::vector<float> out(x.size());
  cpu::rope_forward(x.data(), zeros.data(), n, heads, hd, out.data());
  EXPECT_EQ(out, x);
  const auto pos = random_positions(rng, n, 131072);
  auto y = x;
  cpu::rope_forward(y.data(), pos.data(), n, heads, hd, y.data());
  cpu::rope_backward(y.data(), pos.data(), n, heads, hd, y.data());
  EXPECT_LT(rel_error(y, x), 1e-6);  // two fp32 rotations: a few ulp
}

TEST(Rope, OddHeadDimIsInputError) {
  const std::vector<float> x(3, 1.0f);
  std::vector<float> out(3);
  const std::vector<int64_t> pos = {0};
  try {
    cpu::rope_forward(x.data(), pos.data(), 1, 1, 3, out.data());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "rope_forward head_dim");
  }
}

}  // namespace
}  // namespace lowband::kernels
