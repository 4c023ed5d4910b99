// The MoS K/V codec (runtime/compress/mos_codec.h): warm-up, fitting U₀, the
// rotated projection against a float64 reference, wire bytes, and the ablations.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/compress/dry_codec.h"
#include "runtime/compress/make_codec.h"
#include "runtime/compress/mos_codec.h"
#include "runtime/scenario/load.h"
#include "test_mos_reference.h"

namespace lowband::compress {
namespace {

using test::gaussian;
using test::low_rank_block;
using test::relative_frobenius;

MosOptions small(int d, int rk, int rv, int warmup) {
  MosOptions o;
  o.layers = 2;
  o.kv_heads = 2;
  o.head_dim = d;
  o.k_rank = rk;
  o.v_rank = rv;
  o.bytes_per_element = 2;
  o.warmup_steps = warmup;
  o.seed = 7;
  o.compress_final_layer = true;  // the codec on every layer (the final one has its own tests)
  o.k_frame = KFrame::post_rope;  // K blocks as given (the pre-RoPE frame has its own tests)
  return o;
}

KvBlockId block(int layer, KvTensor t, int owner = 0, int chunk = 0) { return {layer, t, owner, chunk, 0}; }

TEST(MosCodec, WarmupIsExactIdentityWithUncompressedBytes) {
  MosCodec codec(small(8, 2, 3, 2));
  const int64_t n = 6;
  const auto z = gaussian(n * 2 * 8, 1);
  for (int step = 0; step < 2; ++step) {
    codec.begin_step(step);
    std::vector<float> z_hat(z.size(), -1.0f), dz(z.size(), 1.0f);
    // Expect: z_hat == z bit for bit; bytes n·H·d·bpe = 6·2·8·2 = 192 both ways; dz = 1 + dz_hat.
    EXPECT_EQ(codec.forward(block(1, KvTensor::v), n, z.data(), z_hat.data()), 192.0);
    EXPECT_EQ(z_hat, z);
    EXPECT_EQ(codec.backward(block(1, KvTensor::v), n, z.data(), dz.data()), 192.0);
    for (size_t i = 0; i < z.size(); ++i) EXPECT_EQ(dz[i], 1.0f + z[i]);
    EXPECT_FALSE(codec.compressing());
    EXPECT_EQ(codec.reconstruction_error(1, KvTensor::v), 0.0);
  }
  codec.begin_step(2);
  EXPECT_TRUE(codec.compressing());
}

TEST(MosCodec, WarmStartFitsAPlantedSubspaceFromTheLastWarmupStep) {
  // Each head's K rows lie in a rank-2 subspace, V rows in rank 3 (ranks kept: 2 and 3).
  // Step 0 shows data from OTHER subspaces: only the last warm-up step (1) may be fitted.
  const int d = 16, H = 2;
  MosCodec codec(small(d, 2, 3, 2));
  for (int step = 0; step < 2; ++step) {
    codec.begin_step(step);
    const uint64_t basis = step == 0 ? 99 : 5;
    for (int layer = 0; layer < 2; ++layer)
      for (int owner = 0; owner < 2; ++owner)
        for (KvTensor t : {KvTensor::k, KvTensor::v}) {
          const auto z = low_rank_block(24, H, d, t == KvTensor::k ? 2 : 3, basis + layer, 10 * step + owner);
          std::vector<float> z_hat(z.size());
          codec.forward(block(layer, t, owner), 24, z.data(), z_hat.data());
        }
  }
  codec.begin_step(2);
  ASSERT_TRUE(codec.compressing());
  for (int layer = 0; layer < 2; ++layer)
    for (KvTensor t : {KvTensor::k, KvTensor::v}) {
      const int rank = t == KvTensor::k ? 2 : 3;
      // New rows of the same subspace: expect reconstruction error ~ fp32 rounding (< 1e-5).
      const auto z = low_rank_block(40, H, d, rank, 5 + layer, 1234);
      std::vector<float> z_hat(z.size());
      codec.forward(block(layer, t), 40, z.data(), z_hat.data());
      EXPECT_LT(relative_frobenius(z, z_hat), 1e-5) << "layer " << layer;
      EXPECT_LT(codec.reconstruction_error(layer, t), 1e-5);
      // Rank one more than kept: the error cannot vanish (the test can fail).
      const auto over = low_rank_block(40, H, d, rank + 1, 5 + layer, 1234);
      codec.forward(block(layer, t, 1), 40, over.data(), z_hat.data());
      EXPECT_GT(relative_frobenius(over, z_hat), 1e-2);
    }
}

TEST(MosCodec, PreRopeFrameFitsKWhoseProjectionOutputIsLowRank) {
  // K = RoPE(Y) with Y's rows in a rank-2 subspace per head (the K projection's output
  // is low rank). Each RoPE frequency pair spreads over 2 dimensions, so after RoPE
  // the rows fill far more than 2 dimensions: only the pre-RoPE frame fits them.
  const int d = 16, H = 2, rank = 2;
  const int64_t n = 48;
  std::vector<int64_t> positions(n);
  for (int64_t i = 0; i < n; ++i) positions[i] = 37 * i + 5;
  const auto rotated = [&](uint64_t seed) {
    const auto y = low_rank_block(n, H, d, rank, 8, seed);
    const auto k = test::rope(std::vector<double>(y.begin(), y.end()), positions.data(), n, H, d, +1);
    return std::vector<float>(k.begin(), k.end());
  };
  double error[2];
  for (KFrame frame : {KFrame::pre_rope, KFrame::post_rope}) {
    MosOptions o = small(d, rank, rank, 1);
    o.k_frame = frame;
    MosCodec codec(o);
    KvBlockId id = block(0, KvTensor::k);
    id.positions = positions.data();
    const auto warm = rotated(1);
    std::vector<float> z_hat(warm.size());
    codec.begin_step(0);
    codec.forward(id, n, warm.data(), z_hat.data());
    EXPECT_EQ(z_hat, warm) << "warm-up is exact in either frame";
    codec.begin_step(1);
    const auto z = rotated(2);
    codec.forward(id, n, z.data(), z_hat.data());
    error[int(frame)] = relative_frobenius(z, z_hat);
    EXPECT_NEAR(codec.reconstruction_error(0, KvTensor::k), error[int(frame)], 1e-6);
  }
  EXPECT_LT(error[int(KFrame::pre_rope)], 1e-5);   // Ẑ = RoPE(Y·U·Uᵀ) = K exactly
  EXPECT_GT(error[int(KFrame::post_rope)], 0.2);   // a rank-2 subspace of post-RoPE K loses much of it
}

TEST(MosCodec, PreRopeFrameWithoutPositionsFailsAtTheFirstStep) {
  MosOptions o = small(8, 2, 2, 100);
  o.k_frame = KFrame::pre_rope;
  MosCodec codec(o);
  codec.begin_step(0);
  const auto z = gaussian(4 * 2 * 8, 1);
  std::vector<float> z_hat(z.size());
  EXPECT_THROW(codec.forward(block(0, KvTensor::k), 4, z.data(), z_hat.data()), std::logic_error);
  // V has no RoPE: no positions needed.
  EXPECT_EQ(codec.forward(block(0, KvTensor::v), 4, z.data(), z_hat.data()), 4 * 2 * 8 * 2.0);
}

TEST(MosCodec, FullRankIsIdentityAtThetaZeroAndWithinQuarterThetaToTheFourthOtherwise) {
  const int d = 8, H = 2, r = d;
  MosCodec codec(small(d, r, r, 1));
  const int64_t n = 5;
  const auto z = gaussian(n * H * d, 3);
  std::vector<float> z_hat(z.size());
  codec.begin_step(0);
  codec.forward(block(0, KvTensor::k), n, z.data(), z_hat.data());
  codec.begin_step(1);
  // θ = 0 (ψ = 0, b = 0 at init): U₀ square orthonormal, U₀U₀ᵀ = I, so ẑ = z to fp32 rounding.
  EXPECT_EQ(codec.forward(block(0, KvTensor::k), n, z.data(), z_hat.data()), H * (n * r * 2.0 + 4.0));
  EXPECT_LT(relative_frobenius(z, z_hat), 2e-6);
  EXPECT_EQ(codec.theta(block(0, KvTensor::k), 0), 0.0f);

  // θ = b = 0.3: U(θ)U(θ)ᵀ = R Rᵀ = I + ¼θ⁴A⁴ for R = I + θA + ½θ²A², so ẑ = z(I + ¼θ⁴A⁴):
  // not the identity, but off by exactly that (A = AU₀·U₀ᵀ since U₀ is square orthonormal).
  const double theta = 0.3;
  for (int h = 0; h < H; ++h) codec.params()[codec.param_offset(0, KvTensor::k, h) + d] = float(theta);
  codec.forward(block(0, KvTensor::k), n, z.data(), z_hat.data());
  double dev = 0, ref_err = 0, norm = 0;
  for (int h = 0; h < H; ++h) {
    const auto b = test::head_basis(codec, 0, KvTensor::k, h);
    std::vector<double> a(d * d, 0.0), a2(d * d, 0.0), a4(d * d, 0.0);
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j)
        for (int k = 0; k < r; ++k) {
          a[i * d + j] += b.au0[i * r + k] * b.u0[j * r + k];
          a2[i * d + j] += b.a2u0[i * r + k] * b.u0[j * r + k];
        }
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j)
        for (int k = 0; k < d; ++k) a4[i * d + j] += a2[i * d + k] * a2[k * d + j];
    for (int64_t i = 0; i < n; ++i)
      for (int e = 0; e < d; ++e) {
        double expect = z[(i * H + h) * d + e];
        for (int k = 0; k < d; ++k) expect += 0.25 * std::pow(theta, 4) * z[(i * H + h) * d + k] * a4[k * d + e];
        const double got = z_hat[(i * H + h) * d + e], x = z[(i * H + h) * d + e];
        ref_err += (got - expect) * (got - expect);
        dev += (got - x) * (got - x);
        norm += x * x;
      }
  }
  EXPECT_LT(std::sqrt(ref_err / norm), 2e-6);  // matches z(I + ¼θ⁴A⁴)
  EXPECT_GT(std::sqrt(dev / norm), 1e-5);       // and that is measurably not z
  EXPECT_LT(std::sqrt(dev / norm), 0.25 * std::pow(theta, 4) * std::pow(1.6, 4));  // ‖A‖₂ ≈ 1 (< 1.6 here)
}

TEST(MosCodec, LearnedThetaIsPsiDotChunkMeanPlusBias) {
  const int d = 6, H = 2;
  MosOptions o = small(d, 2, 3, 0);
  o.warm_start = false;
  MosCodec codec(o);
  codec.begin_step(0);
  ASSERT_EQ(codec.param_count(), 2 * 2 * H * (d + 1));
  const auto p = gaussian(codec.param_count(), 11, 0.2);
  std::copy(p.begin(), p.end(), codec.params());
  const int64_t n = 7;
  const auto z = gaussian(n * H * d, 12);
  std::vector<float> z_hat(z.size());
  codec.forward(block(1, KvTensor::v), n, z.data(), z_hat.data());
  std::vector<double> psi_b;
  std::vector<test::HeadBasis> bases;
  for (int h = 0; h < H; ++h) {
    const float* q = codec.params() + codec.param_offset(1, KvTensor::v, h);
    psi_b.insert(psi_b.end(), q, q + d + 1);
    bases.push_back(test::head_basis(codec, 1, KvTensor::v, h));
    double theta = q[d];
    for (int e = 0; e < d; ++e) {
      double mean = 0;
      for (int64_t i = 0; i < n; ++i) mean += z[(i * H + h) * d + e];
      theta += q[e] * mean / n;
    }
    EXPECT_NEAR(codec.theta(block(1, KvTensor::v), h), theta, 1e-6);
  }
  const auto ref = test::mos_reference(bases, n, H, d, 3, std::vector<double>(z.begin(), z.end()), psi_b);
  for (size_t i = 0; i < z.size(); ++i) EXPECT_NEAR(z_hat[i], ref[i], 1e-5);
}

// compress_final_layer false (the scenario's default): once compressing, layer 1
// of 2 crosses as z itself both ways (identity bytes, exact), layer 0 compressed;
// the dry codec `estimate` runs sizes its messages alike.
TEST(MosCodec, FinalLayerCrossesUncompressed) {
  const int d = 8, H = 2;
  const int64_t n = 16;
  MosOptions o = small(d, 2, 3, 0);
  o.warm_start = false;
  o.compress_final_layer = false;
  MosCodec codec(o);
  EXPECT_TRUE(codec.compresses_layer(0));
  EXPECT_FALSE(codec.compresses_layer(1));
  codec.begin_step(0);
  ASSERT_TRUE(codec.compressing());
  const auto z = gaussian(n * H * d, 9);
  const double plain = double(n) * H * d * 2;
  for (KvTensor t : {KvTensor::k, KvTensor::v}) {
    std::vector<float> z_hat(z.size()), dz(z.size(), 0.0f);
    EXPECT_EQ(codec.forward(block(1, t), n, z.data(), z_hat.data()), plain);
    EXPECT_EQ(z_hat, z);
    EXPECT_EQ(codec.backward(block(1, t), n, z.data(), dz.data()), plain);
    EXPECT_EQ(dz, z);  // dz += dẑ, exactly
    EXPECT_EQ(codec.forward(block(0, t), n, z.data(), z_hat.data()), codec.message_bytes(t, n));
    EXPECT_LT(codec.message_bytes(t, n), plain);
    EXPECT_GT(relative_frobenius(z, z_hat), 0.1);
  }
  EXPECT_EQ(codec.reconstruction_error(1, KvTensor::k), 0.0);
  EXPECT_GT(codec.reconstruction_error(0, KvTensor::k), 0.1);
  EXPECT_NE(codec.describe().find("final layer uncompressed"), std::string::npos) << codec.describe();

  Scenario s = builtin_scenario("default", {"model.layers=2", "parallel.context=2", "network.nodes=2",
                                            "compression.method=mos", "compression.k_rank=2", "compression.v_rank=3",
                                            "compression.warm_start=false", "compression.k_frame=post_rope"});
  for (bool all : {false, true}) {
    s.compression.compress_final_layer = all;
    auto dry = make_kv_codec_on(s, kernels::Device::dry);
    dry->begin_step(0);
    const auto real = make_kv_codec(s);
    const int Hs = s.model.kv_heads, ds = s.model.head_dim(), b = s.model.bytes_per_element;
    CodecMessage m;
    CodecGradient g;
    dry->encode(block(1, KvTensor::v), n, nullptr, m);
    dry->encode_gradient(block(1, KvTensor::v), n, nullptr, g);
    const double want = all ? real->message_bytes(KvTensor::v, n) : double(n) * Hs * ds * b;
    EXPECT_EQ(m.wire_bytes, want) << all;
    EXPECT_EQ(g.wire_bytes, all ? real->gradient_message_bytes(KvTensor::v, n) : want) << all;
    dry->encode(block(0, KvTensor::v), n, nullptr, m);
    EXPECT_EQ(m.wire_bytes, real->message_bytes(KvTensor::v, n)) << all;
  }
}

// compression.rotation_params m = 2: A₀ is the one generator of m = 1 (its
// products bit for bit), A₁ another skew generator; m θ per head cross (4·m
// bytes each way where learned), and ψ, b are m per key.
TEST(MosCodec, TwoRotationGeneratorsSendTwoThetasPerHead) {
  const int d = 8, H = 2;
  const int64_t n = 16;
  MosOptions one = small(d, 2, 3, 0);
  one.warm_start = false;
  MosOptions two = one;
  two.rotation_params = 2;
  MosCodec a(one), b(two);
  a.begin_step(0);
  b.begin_step(0);
  EXPECT_EQ(b.param_count(), 2 * a.param_count());
  const auto& au0 = b.au0(0, KvTensor::k, 1);
  const size_t dr = size_t(d) * 2;
  ASSERT_EQ(au0.size(), 2 * dr);
  ASSERT_EQ(b.a2u0(0, KvTensor::k, 1).size(), 4 * dr);
  EXPECT_EQ(std::vector<float>(au0.begin(), au0.begin() + dr), a.au0(0, KvTensor::k, 1));
  EXPECT_EQ(std::vector<float>(b.a2u0(0, KvTensor::k, 1).begin(), b.a2u0(0, KvTensor::k, 1).begin() + dr),
            a.a2u0(0, KvTensor::k, 1));
  // U₀ᵀ·A₁·U₀ is skew-symmetric (A₁ is) and A₁·U₀ is not A₀·U₀.
  const auto& u0 = b.u0(0, KvTensor::k, 1);
  double diff = 0;
  for (size_t e = 0; e < dr; ++e) diff += std::abs(au0[dr + e] - au0[e]);
  EXPECT_GT(diff, 0.1);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      double ij = 0, ji = 0;
      for (int e = 0; e < d; ++e) ij += double(u0[e * 2 + i]) * au0[dr + e * 2 + j], ji += double(u0[e * 2 + j]) * au0[dr + e * 2 + i];
      EXPECT_NEAR(ij, -ji, 1e-5);
    }
  const auto z = gaussian(n * H * d, 12);
  std::vector<float> z_hat(z.size()), dz(z.size(), 0.0f);
  CodecMessage m;
  b.encode(block(0, KvTensor::k), n, z.data(), m);
  EXPECT_EQ(m.values.size(), size_t(H * n * 2 + H * 2));  // C, then θ (2 per head)
  EXPECT_EQ(m.wire_bytes, H * (n * 2.0 * 2 + 8));
  EXPECT_EQ(b.message_bytes(KvTensor::k, n), H * (n * 2.0 * 2 + 8));
  EXPECT_EQ(b.gradient_message_bytes(KvTensor::k, n), H * (n * 2.0 * 2 + 8));
  EXPECT_EQ(b.gradient_floats(KvTensor::k, n), H * n * 2 + H * 2);
  EXPECT_EQ(b.forward(block(0, KvTensor::k), n, z.data(), z_hat.data()), H * (n * 2.0 * 2 + 8));
  EXPECT_EQ(b.backward(block(0, KvTensor::k), n, z.data(), dz.data()), H * (n * 2.0 * 2 + 8));
  EXPECT_NE(b.describe().find("2 generators"), std::string::npos) << b.describe();
}

TEST(MosCodec, WireBytesAreTheClosedFormAndThePaperSettingSaves96Point5Percent) {
  // The paper's setting (builtin scenario): head_dim 256, K rank 5, V rank 13, bf16.
  Scenario s = builtin_scenario("mos-paper-mos-300mbps", {"model.layers=1"});  // bytes are per layer
  s.compression.warmup_steps = 0;
  s.compression.compress_final_layer = true;  // the one layer is the final one
  auto made = make_kv_codec(s);
  auto* codec = dynamic_cast<MosCodec*>(made.get());
  ASSERT_NE(codec, nullptr);
  ASSERT_EQ(codec->rank(KvTensor::k), 5);
  ASSERT_EQ(codec->rank(KvTensor::v), 13);
  const int H = s.model.kv_heads, d = 256, bpe = s.model.bytes_per_element;
  const int64_t n = 64;
  codec->begin_step(0);
  const auto z = gaussian(n * H * d, 4);
  std::vector<float> z_hat(z.size()), dz(z.size(), 0.0f);
  std::vector<int64_t> positions(n);
  for (int64_t i = 0; i < n; ++i) positions[i] = 1000 + i;
  KvBlockId k_block = block(0, KvTensor::k);
  k_block.positions = positions.data();  // K is compressed before RoPE by default
  // Expect per head n·r·bpe for C plus 4 bytes for θ, both directions.
  const double k_bytes = codec->forward(k_block, n, z.data(), z_hat.data());
  const double v_bytes = codec->forward(block(0, KvTensor::v), n, z.data(), z_hat.data());
  EXPECT_EQ(k_bytes, H * (n * 5.0 * bpe + 4));
  EXPECT_EQ(v_bytes, H * (n * 13.0 * bpe + 4));
  EXPECT_EQ(codec->backward(k_block, n, z.data(), dz.data()), k_bytes);
  const double plain = 2.0 * n * H * d * bpe;
  // 1 − 18/512 = 96.484 % on C alone; θ adds 8 bytes per head per n rows.
  EXPECT_DOUBLE_EQ(1 - (k_bytes + v_bytes) / plain, 1 - 18.0 / 512 - 8.0 / (512.0 * n * bpe));
  const double big_n = 66000;  // a 132K-token sequence over 2 chunks
  const double ratio = 1 - (codec->message_bytes(KvTensor::k, big_n) + codec->message_bytes(KvTensor::v, big_n)) /
                               (2.0 * big_n * H * d * bpe);
  EXPECT_NEAR(ratio, 0.965, 5e-4);
}

}  // namespace
}  // namespace lowband::compress
