// The MoS ablation options (compression.rotation, compression.warm_start) do
// what docs/design.md §4.1's ablations describe.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "runtime/compress/mos_codec.h"
#include "test_mos_reference.h"

namespace lowband::compress {
namespace {

MosOptions options(MosRotation rotation, bool warm_start) {
  MosOptions o;
  o.layers = 1;
  o.kv_heads = 2;
  o.head_dim = 8;
  o.k_rank = 3;
  o.v_rank = 4;
  o.bytes_per_element = 2;
  o.rotation = rotation;
  o.warm_start = warm_start;
  o.warmup_steps = warm_start ? 1 : 0;
  o.seed = 5;
  o.compress_final_layer = true;  // the codec on every layer (the final one has its own tests)
  o.k_frame = KFrame::post_rope;
  return o;
}

std::vector<test::HeadBasis> bases_of(const MosCodec& c, KvTensor t) {
  return {test::head_basis(c, 0, t, 0), test::head_basis(c, 0, t, 1)};
}

TEST(MosAblations, FixedRotationProjectsOnU0WithNoThetaAndNoParameters) {
  MosCodec codec(options(MosRotation::fixed, false));
  codec.begin_step(0);
  EXPECT_EQ(codec.param_count(), 0);
  const int64_t n = 6;
  const auto z = test::gaussian(n * 2 * 8, 1);
  std::vector<float> z_hat(z.size()), dz(z.size(), 0.0f);
  const KvBlockId id{0, KvTensor::k, 0, 0, 0};
  // Expect ẑ = Z·U₀·U₀ᵀ (θ = 0), and n·r·bpe per head with no θ bytes either way.
  EXPECT_EQ(codec.forward(id, n, z.data(), z_hat.data()), 2 * (n * 3.0 * 2));
  EXPECT_EQ(codec.theta(id, 0), 0.0f);
  EXPECT_EQ(codec.theta(id, 1), 0.0f);
  const auto ref = test::mos_reference(bases_of(codec, KvTensor::k), n, 2, 8, 3, {z.begin(), z.end()}, {}, 0.0);
  for (size_t i = 0; i < z.size(); ++i) EXPECT_NEAR(z_hat[i], ref[i], 1e-5);
  EXPECT_EQ(codec.backward(id, n, z.data(), dz.data()), 2 * (n * 3.0 * 2));
}

TEST(MosAblations, RandomRotationDrawsThetaPerChunkAndStepNotLearned) {
  MosCodec codec(options(MosRotation::random, false));
  EXPECT_EQ(codec.param_count(), 0);
  const int64_t n = 4;
  const auto z = test::gaussian(n * 2 * 8, 2);
  std::vector<float> z_hat(z.size());
  std::set<float> thetas;
  for (int step = 0; step < 3; ++step) {
    codec.begin_step(step);
    for (int owner = 0; owner < 4; ++owner) {
      const KvBlockId id{0, KvTensor::v, owner, 0, 0};
      // θ sent with C: n·r·bpe + 4 per head; its gradient is not sent back (not learned).
      EXPECT_EQ(codec.forward(id, n, z.data(), z_hat.data()), 2 * (n * 4.0 * 2 + 4));
      for (int h = 0; h < 2; ++h) {
        const float theta = codec.theta(id, h);
        EXPECT_LE(std::abs(theta), kRandomThetaMax);
        thetas.insert(theta);
      }
      // The same data in another chunk, step or head rotates differently, and ẑ follows θ.
      std::vector<double> psi_b;
      for (int h = 0; h < 2; ++h) {
        std::vector<double> p(9, 0.0);
        p[8] = codec.theta(id, h);  // θ as the bias alone: ψ = 0
        psi_b.insert(psi_b.end(), p.begin(), p.end());
      }
      const auto ref = test::mos_reference(bases_of(codec, KvTensor::v), n, 2, 8, 4, {z.begin(), z.end()}, psi_b);
      for (size_t i = 0; i < z.size(); ++i) ASSERT_NEAR(z_hat[i], ref[i], 1e-5);
      std::vector<float> dz(z.size(), 0.0f);
      EXPECT_EQ(codec.backward(id, n, z.data(), dz.data()), 2 * (n * 4.0 * 2));
    }
  }
  EXPECT_EQ(thetas.size(), 3u * 4 * 2) << "one θ per (step, chunk, head)";
  // Deterministic: the same step and block draws the same θ again.
  MosCodec again(options(MosRotation::random, false));
  again.begin_step(2);
  const KvBlockId id{0, KvTensor::v, 3, 0, 0};
  again.forward(id, n, z.data(), z_hat.data());
  codec.forward(id, n, z.data(), z_hat.data());
  EXPECT_EQ(again.theta(id, 1), codec.theta(id, 1));
}

TEST(MosAblations, NoWarmStartUsesRandomOrthonormalU0FromStepZero) {
  MosCodec codec(options(MosRotation::learned, false));
  EXPECT_TRUE(codec.compressing()) << "no warm-up";
  const int d = 8, r = 3;
  const auto& u = codec.u0(0, KvTensor::k, 1);
  // Expect U₀ᵀU₀ = I (3 x 3) to fp32 rounding.
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < r; ++j) {
      double dot = 0;
      for (int e = 0; e < d; ++e) dot += double(u[e * r + i]) * u[e * r + j];
      EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, 1e-6);
    }
  // Different keys and seeds give different bases.
  EXPECT_NE(codec.u0(0, KvTensor::k, 0), codec.u0(0, KvTensor::k, 1));
  MosOptions other = options(MosRotation::learned, false);
  other.seed = 6;
  EXPECT_NE(MosCodec(other).u0(0, KvTensor::k, 1), u);
  // Low-rank data is NOT fitted: a random 3-dim subspace of 8 leaves most of it out.
  codec.begin_step(0);
  const auto z = test::low_rank_block(30, 2, d, r, 1, 2);
  std::vector<float> z_hat(z.size());
  codec.forward({0, KvTensor::k, 0, 0, 0}, 30, z.data(), z_hat.data());
  EXPECT_GT(test::relative_frobenius(z, z_hat), 0.1);
}

TEST(MosAblations, WarmupZeroWithWarmStartFallsBackToRandomU0) {
  MosOptions o = options(MosRotation::learned, true);
  o.warmup_steps = 0;
  MosCodec codec(o);
  EXPECT_FALSE(codec.compressing());
  codec.begin_step(0);  // nothing observed: U₀ random, as with warm_start false
  EXPECT_TRUE(codec.compressing());
  MosCodec cold(options(MosRotation::learned, false));
  EXPECT_EQ(codec.u0(0, KvTensor::v, 0), cold.u0(0, KvTensor::v, 0));
}

}  // namespace
}  // namespace lowband::compress
