// Fused softmax + cross-entropy: per-row loss, logsumexp, mean over valid rows,
// and dlogits against float64 references and finite differences; ignored rows
// (target < 0) and numerically large logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "kernels/cross_entropy.h"
#include "tests/kernels/reference.h"

namespace lowband::kernels {
namespace {

using namespace test;

double ref_lse(const double* row, int64_t V) {
  const double mx = *std::max_element(row, row + V);
  double s = 0.0;
  for (int64_t j = 0; j < V; ++j) s += std::exp(row[j] - mx);
  return mx + std::log(s);
}

// Mean loss over valid rows, float64.
double ref_mean_loss(const std::vector<double>& logits, const std::vector<int32_t>& targets,
                     int64_t n, int64_t V) {
  double total = 0.0;
  int64_t valid = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (targets[size_t(i)] < 0) continue;
    const double* row = logits.data() + i * V;
    total += ref_lse(row, V) - row[targets[size_t(i)]];
    ++valid;
  }
  return valid ? total / double(valid) : 0.0;
}

struct Shape {
  int64_t n, V;
};

TEST(CrossEntropy, ForwardAndBackwardMatchFloat64Reference) {
  for (Shape s : {Shape{1, 1}, Shape{4, 7}, Shape{33, 1001}, Shape{6, 50257}}) {
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE(seed_note(seed) + " n=" + std::to_string(s.n) + " V=" + std::to_string(s.V));
    Rng rng(seed);
    auto logits = random_floats(rng, size_t(s.n * s.V), -10.0f, 10.0f);
    // Row 0 shifted by +100: exp would overflow fp32 without the max subtraction.
    for (int64_t j = 0; j < s.V; ++j) logits[size_t(j)] += 100.0f;
    auto targets = random_ints(rng, size_t(s.n), 0, int32_t(s.V - 1));
    if (s.n > 2) targets[1] = -1;  // ignored row
    const auto l64 = to_double(logits);

    std::vector<double> want_losses(size_t(s.n)), want_lse(size_t(s.n));
    int64_t valid = 0;
    for (int64_t i = 0; i < s.n; ++i) {
      want_lse[size_t(i)] = ref_lse(l64.data() + i * s.V, s.V);
      const int32_t t = targets[size_t(i)];
      want_losses[size_t(i)] = t >= 0 ? want_lse[size_t(i)] - l64[size_t(i * s.V + t)] : 0.0;
      valid += t >= 0;
    }
    std::vector<float> losses(size_t(s.n)), lse(size_t(s.n));
    poison(losses);
    poison(lse);
    const float mean = cpu::cross_entropy_forward(logits.data(), targets.data(), s.n, s.V,
                                                  losses.data(), lse.data());
    EXPECT_LT(rel_error(losses, want_losses), 1e-5);
    EXPECT_LT(rel_error(lse, want_lse), 1e-5);
    const double want_mean = ref_mean_loss(l64, targets, s.n, s.V);
    EXPECT_NEAR(mean, want_mean, 1e-5 * std::max(1.0, std::abs(want_mean)));

    // dlogits = dloss * (softmax - onehot) / n_valid; zero rows for ignored targets.
    const float dloss = 0.75f;
    std::vector<double> want_d(logits.size(), 0.0);
    for (int64_t i = 0; i < s.n; ++i) {
      const int32_t t = targets[size_t(i)];
      if (t < 0) continue;
      for (int64_t j = 0; j < s.V; ++j) {
        const size_t k = size_t(i * s.V + j);
        want_d[k] = dloss * (std::exp(l64[k] - want_lse[size_t(i)]) - (j == t ? 1.0 : 0.0)) / double(valid);
      }
    }
    std::vector<float> dlogits(logits.size());
    poison(dlogits);
    cpu::cross_entropy_backward(logits.data(), targets.data(), lse.data(), s.n, s.V,
                                dlogits.data(), dloss);
    // V == 1: softmax is exactly 1, so the gradient is exactly zero.
    EXPECT_LT(rel_error(dlogits, want_d), 1e-5);
    if (s.n > 2) {
      for (int64_t j = 0; j < s.V; ++j) ASSERT_EQ(dlogits[size_t(s.V + j)], 0.0f);
    }

    // In place: dlogits over logits.
    cpu::cross_entropy_backward(logits.data(), targets.data(), lse.data(), s.n, s.V,
                                logits.data(), dloss);
    EXPECT_EQ(logits, dlogits);
  }
}

TEST(CrossEntropy, BackwardMatchesFiniteDifferencesOfTheMeanLoss) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const int64_t n = 5, V = 11;
  const auto logits = random_floats(rng, size_t(n * V), -3.0f, 3.0f);
  auto targets = random_ints(rng, size_t(n), 0, int32_t(V - 1));
  targets[3] = -7;
  const auto numeric = numeric_gradient(
      [&](const std::vector<double>& l) { return ref_mean_loss(l, targets, n, V); },
      to_double(logits));
  std::vector<float> losses(static_cast<size_t>(n)), lse(static_cast<size_t>(n)), dlogits(logits.size());
  poison(dlogits);
  cpu::cross_entropy_forward(logits.data(), targets.data(), n, V, losses.data(), lse.data());
  cpu::cross_entropy_backward(logits.data(), targets.data(), lse.data(), n, V, dlogits.data());
  EXPECT_LT(rel_error(dlogits, numeric), 1e-5);
}

TEST(CrossEntropy, AllRowsIgnoredGivesZeroLossAndGradient) {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f, 4.0f};
  const std::vector<int32_t> targets = {-1, -1};
  std::vector<float> losses(2), lse(2), d(4);
  poison(d);
  EXPECT_EQ(cpu::cross_entropy_forward(logits.data(), targets.data(), 2, 2, losses.data(), lse.data()), 0.0f);
  cpu::cross_entropy_backward(logits.data(), targets.data(), lse.data(), 2, 2, d.data());
  EXPECT_EQ(d, std::vector<float>(4, 0.0f));
}

TEST(CrossEntropy, TargetBeyondVocabularyIsInputError) {
  const std::vector<float> logits(6, 0.0f);
  const std::vector<int32_t> targets = {1, 3};
  std::vector<float> losses(2), lse(2);
  try {
    cpu::cross_entropy_forward(logits.data(), targets.data(), 2, 3, losses.data(), lse.data());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "cross_entropy_forward targets[1]");
  }
}

}  // namespace
}  // namespace lowband::kernels
