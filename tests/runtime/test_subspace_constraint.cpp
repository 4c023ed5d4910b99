// The subspace constraint (runtime/compress/subspace_constraint.h): U is
// orthonormal and a function of the seed, E_fixed its own stream, and the
// projections match float64 U·Uᵀ on the CPU and CUDA backends.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "common/error.h"
#include "kernels/backend_buffer.h"
#include "kernels/device.h"
#include "runtime/compress/subspace_constraint.h"
#include "test_mos_reference.h"

namespace lowband::compress {
namespace {

using test::gaussian;
using test::relative_frobenius;

// Float64 P·W for W (d, cols) or W·P for W (rows, d), P = U·Uᵀ.
std::vector<float> projected_ref(const std::vector<float>& U, int d, int k, const std::vector<float>& W,
                                 int64_t other, bool columns) {
  std::vector<float> out(W.size());
  auto w = [&](int64_t e, int64_t c) { return double(columns ? W[e * other + c] : W[c * d + e]); };
  for (int64_t c = 0; c < other; ++c)
    for (int e = 0; e < d; ++e) {
      double y = 0;
      for (int j = 0; j < k; ++j) {
        double t = 0;  // (Uᵀ w_c)_j
        for (int f = 0; f < d; ++f) t += double(U[f * k + j]) * w(f, c);
        y += double(U[e * k + j]) * t;
      }
      (columns ? out[e * other + c] : out[c * d + e]) = float(y);
    }
  return out;
}

TEST(SubspaceBasis, IsOrthonormalAndAFunctionOfTheSeed) {
  for (const auto& [d, k] : {std::pair{48, 12}, std::pair{16, 16}}) {
    const auto U = subspace_basis(d, k, 7);
    ASSERT_EQ(U.size(), size_t(d * k));
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < k; ++j) {
        double dot = 0;
        for (int e = 0; e < d; ++e) dot += double(U[e * k + i]) * U[e * k + j];
        EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, 1e-6) << "d " << d << " columns " << i << ", " << j;
      }
    EXPECT_EQ(subspace_basis(d, k, 7), U);
    EXPECT_NE(subspace_basis(d, k, 8), U);
  }
}

TEST(FixedEmbedding, IsNormalTimesPoint02OnAStreamApartFromTheBasis) {
  const int vocab = 64, d = 256, k = 4;
  const auto E = fixed_embedding(vocab, d, 3);
  EXPECT_EQ(fixed_embedding(vocab, d, 3), E);
  EXPECT_NE(fixed_embedding(vocab, d, 4), E);
  double sum = 0, sq = 0;
  for (float x : E) sum += x, sq += double(x) * x;
  const double mean = sum / E.size(), sd = std::sqrt(sq / E.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.002);
  EXPECT_NEAR(sd, 0.02, 0.001);  // 16384 draws: the sample sd is 0.02 ± 0.0001
  // U's first column is its first Gaussian column normalised: on the same stream it
  // would be exactly proportional to E's entries at the same positions.
  const auto U = subspace_basis(d, k, 3);
  double uu = 0, ee = 0, ue = 0;
  for (int e = 0; e < d; ++e) {
    const double u = U[e * k], x = E[e * k];
    uu += u * u, ee += x * x, ue += u * x;
  }
  EXPECT_LT(std::abs(ue / std::sqrt(uu * ee)), 0.4);  // independent: |corr| ~ 1/16
}

TEST(SubspaceBasis, RankOutsideOneToDIsAnInputError) {
  for (int k : {0, 17}) {
    try {
      subspace_basis(16, k, 1);
      ADD_FAILURE() << "no error for rank " << k;
    } catch (const InputError& e) {
      EXPECT_EQ(e.place(), "compression.boundary.rank");
    }
  }
  EXPECT_THROW(SubspaceConstraint(kernels::backend(kernels::Device::cpu), 8, 9, 1), InputError);
}

// Projects (d, cols) and (rows, d) weights on `device` and checks them against
// float64, then that a second projection changes nothing.
void check_projections(kernels::Device device) {
  const auto& k = kernels::backend(device);
  const int d = 40, rank = 7;
  SubspaceConstraint c(k, d, rank, 11);
  EXPECT_EQ(c.basis(), subspace_basis(d, rank, 11));
  for (int64_t other : {13, 3, 29}) {  // grows and reuses the scratch buffer
    for (bool columns : {true, false}) {
      const auto W = gaussian(size_t(d * other), 100 + other + columns);
      kernels::BackendBuffer<float> w(k, W);
      columns ? c.project_columns(w.data(), other) : c.project_rows(w.data(), other);
      const auto once = w.to_host();
      const auto ref = projected_ref(c.basis(), d, rank, W, other, columns);
      EXPECT_LT(relative_frobenius(ref, once), 1e-6) << "other " << other << " columns " << columns;
      EXPECT_GT(relative_frobenius(W, once), 0.5) << "rank 7 of 40 removes most of a Gaussian W";
      columns ? c.project_columns(w.data(), other) : c.project_rows(w.data(), other);
      EXPECT_LT(relative_frobenius(once, w.to_host()), 1e-6) << "idempotent";
    }
  }
}

TEST(SubspaceConstraint, ProjectionsMatchFloat64AndAreIdempotentOnCpu) { check_projections(kernels::Device::cpu); }

TEST(SubspaceConstraint, ProjectionsMatchFloat64AndAreIdempotentOnCuda) {
  std::string why;
  if (!kernels::cuda_available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  check_projections(kernels::Device::cuda);
}

}  // namespace
}  // namespace lowband::compress
