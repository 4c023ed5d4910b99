// SwiGLU forward and backward against float64 references and finite differences.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/swiglu.h"
#include "tests/kernels/reference.h"

namespace lowband::kernels {
namespace {

using namespace test;

double silu(double a) { return a / (1.0 + std::exp(-a)); }

struct Shape {
  int64_t n, f;
};

TEST(SwiGlu, ForwardAndBackwardMatchFloat64Reference) {
  // Gates in [-12, 12] reach the sigmoid's saturated tails; (129, 771) is threaded.
  for (Shape s : {Shape{1, 1}, Shape{3, 17}, Shape{16, 48}, Shape{129, 771}}) {
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE(seed_note(seed) + " n=" + std::to_string(s.n) + " f=" + std::to_string(s.f));
    Rng rng(seed);
    const size_t count = size_t(s.n * s.f);
    const auto a = random_floats(rng, count, -12.0f, 12.0f);
    const auto b = random_floats(rng, count, -2.0f, 2.0f);
    const auto dout = random_floats(rng, count);
    std::vector<double> want(count), want_da(count), want_db(count);
    for (size_t i = 0; i < count; ++i) {
      const double ai = a[i], sig = 1.0 / (1.0 + std::exp(-ai));
      want[i] = silu(ai) * b[i];
      want_da[i] = double(dout[i]) * b[i] * sig * (1.0 + ai * (1.0 - sig));
      want_db[i] = double(dout[i]) * silu(ai);
    }
    std::vector<float> out(count), da(count), db(count);
    poison(out);
    poison(da);
    poison(db);
    cpu::swiglu_forward(a.data(), b.data(), s.n, s.f, out.data());
    cpu::swiglu_backward(dout.data(), a.data(), b.data(), s.n, s.f, da.data(), db.data());
    EXPECT_LT(rel_error(out, want), 1e-5);
    EXPECT_LT(rel_error(da, want_da), 1e-5);
    EXPECT_LT(rel_error(db, want_db), 1e-5);
  }
}

TEST(SwiGlu, BackwardMatchesFiniteDifferences) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const int64_t n = 4, f = 7;
  const auto a = random_floats(rng, size_t(n * f), -4.0f, 4.0f);
  const auto b = random_floats(rng, size_t(n * f));
  const auto G = random_floats(rng, size_t(n * f));
  const auto g = to_double(G), a64 = to_double(a), b64 = to_double(b);
  auto loss = [&](const std::vector<double>& av, const std::vector<double>& bv) {
    double s = 0.0;
    for (size_t i = 0; i < av.size(); ++i) s += g[i] * silu(av[i]) * bv[i];
    return s;
  };
  const auto num_da = numeric_gradient([&](const std::vector<double>& v) { return loss(v, b64); }, a64);
  const auto num_db = numeric_gradient([&](const std::vector<double>& v) { return loss(a64, v); }, b64);
  std::vector<float> da(a.size()), db(b.size());
  poison(da);
  poison(db);
  cpu::swiglu_backward(G.data(), a.data(), b.data(), n, f, da.data(), db.data());
  EXPECT_LT(rel_error(da, num_da), 1e-5);
  EXPECT_LT(rel_error(db, num_db), 1e-5);
}

}  // namespace
}  // namespace lowband::kernels
