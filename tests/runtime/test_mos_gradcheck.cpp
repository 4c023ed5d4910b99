// The MoS codec's backward (dz, dψ, db) against central finite differences of
// a float64 reimplementation of its forward, L = Σ w ⊙ Ẑ, with one rotation
// generator and with m of them (compression.rotation_params): through one codec's
// forward/backward, and split as across ranks (an owner's codec and two
// receivers' codecs, each receiver sending the gradient of its own part of w).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "runtime/compress/mos_codec.h"
#include "test_mos_reference.h"

namespace lowband::compress {
namespace {

struct Case {
  KvTensor tensor;
  int rank;
  int64_t n;
  KFrame frame;  // pre_rope: Ẑ = RoPE(map(RoPE⁻¹(Z))) for K
  bool split;    // owner + receivers (encode/decode...) rather than forward/backward
  int m = 1;     // compression.rotation_params: rotation generators per key
};

class MosGradcheck : public ::testing::TestWithParam<Case> {};

TEST_P(MosGradcheck, BackwardMatchesFiniteDifferencesOfFloat64Reference) {
  const Case c = GetParam();
  const int d = 8, H = 2, layer = 1;
  MosOptions o;
  o.layers = 2;
  o.kv_heads = H;
  o.head_dim = d;
  o.k_rank = c.tensor == KvTensor::k ? c.rank : 1;
  o.v_rank = c.tensor == KvTensor::v ? c.rank : 1;
  o.warm_start = false;  // random U₀: compressing from step 0
  o.warmup_steps = 0;
  o.seed = 3;
  o.compress_final_layer = true;  // the codec on every layer (the final one has its own tests)
  o.k_frame = c.frame;
  o.rotation_params = c.m;
  const int per_head = c.m * (d + 1);  // ψⱼ, bⱼ
  MosCodec codec(o);
  codec.begin_step(0);
  // ψ, b of order 0.3 so θ is far from 0 and every term of dθ matters.
  const auto p = test::gaussian(codec.param_count(), 21, 0.3);
  std::copy(p.begin(), p.end(), codec.params());
  const int64_t n = c.n;
  const auto z = test::gaussian(n * H * d, 22);
  const auto w = test::gaussian(n * H * d, 23);  // dL/dẐ
  const std::vector<int64_t> positions = {5, 6, 7, 300, 40001};  // global, not row indices
  const bool rotated = c.tensor == KvTensor::k && c.frame == KFrame::pre_rope;
  KvBlockId id{layer, c.tensor, 1, 0, 0};
  id.positions = positions.data();
  std::vector<float> z_hat(z.size()), dz(z.size(), 0.5f);
  if (!c.split) {
    codec.forward(id, n, z.data(), z_hat.data());
    codec.zero_grads();
    codec.backward(id, n, w.data(), dz.data());
  } else {
    // `codec` owns the block; two receivers built from the same options, with a
    // different ψ (θ comes in the message), each hold part of w = w1 + w2.
    MosCodec r1(o), r2(o);
    CodecMessage message;
    codec.encode(id, n, z.data(), message);
    std::vector<float> z_hat2(z.size());
    CodecGradient summed;
    for (MosCodec* r : {&r1, &r2}) {
      r->begin_step(0);
      const auto q = test::gaussian(r->param_count(), 77, 0.3);
      std::copy(q.begin(), q.end(), r->params());
      r->decode(id, n, message, r == &r1 ? z_hat.data() : z_hat2.data());
    }
    EXPECT_EQ(z_hat, z_hat2);
    const auto w1 = test::gaussian(n * H * d, 24);
    std::vector<float> w2(w.size());
    for (size_t i = 0; i < w.size(); ++i) w2[i] = w[i] - w1[i];
    CodecGradient g1, g2;
    r1.encode_gradient(id, n, w1.data(), g1);
    r2.encode_gradient(id, n, w2.data(), g2);
    summed.add(g1);
    summed.add(g2);
    codec.zero_grads();
    codec.decode_gradient(id, n, summed, dz.data());
  }

  std::vector<test::HeadBasis> bases;
  std::vector<double> psi_b;
  for (int h = 0; h < H; ++h) {
    bases.push_back(test::head_basis(codec, layer, c.tensor, h));
    const float* q = codec.params() + codec.param_offset(layer, c.tensor, h);
    psi_b.insert(psi_b.end(), q, q + per_head);
  }
  std::vector<double> zd(z.begin(), z.end());
  const auto map = [&](const std::vector<double>& zz, const std::vector<double>& pp) {
    return c.m == 1 ? test::mos_reference(bases, n, H, d, c.rank, zz, pp)
                    : test::mos_reference_m(bases, n, H, d, c.rank, c.m, zz, pp);
  };
  const auto reference = [&](const std::vector<double>& zz, const std::vector<double>& pp) {
    return rotated ? test::rope(map(test::rope(zz, positions.data(), n, H, d, -1), pp), positions.data(), n, H, d, +1)
                   : map(zz, pp);
  };
  const auto loss = [&](const std::vector<double>& zz, const std::vector<double>& pp) {
    const auto out = reference(zz, pp);
    double sum = 0;
    for (size_t i = 0; i < out.size(); ++i) sum += w[i] * out[i];
    return sum;
  };
  // The forward itself: ẑ equals the float64 map to fp32 rounding.
  const auto ref = reference(zd, psi_b);
  for (size_t i = 0; i < zd.size(); ++i) EXPECT_NEAR(z_hat[i], ref[i], 1e-5) << "z_hat[" << i << "]";
  const double eps = 1e-5;
  // Expect: dz (on top of the 0.5 it held) and dψ, db equal the float64 central
  // differences to fp32 accuracy: |analytic − numeric| <= 1e-4·(1 + |numeric|).
  for (size_t i = 0; i < zd.size(); ++i) {
    auto up = zd, down = zd;
    up[i] += eps;
    down[i] -= eps;
    const double numeric = (loss(up, psi_b) - loss(down, psi_b)) / (2 * eps);
    EXPECT_NEAR(dz[i] - 0.5, numeric, 1e-4 * (1 + std::abs(numeric))) << "dz[" << i << "]";
  }
  for (int h = 0; h < H; ++h)
    for (int e = 0; e < per_head; ++e) {
      auto up = psi_b, down = psi_b;
      up[h * per_head + e] += eps;
      down[h * per_head + e] -= eps;
      const double numeric = (loss(zd, up) - loss(zd, down)) / (2 * eps);
      const float analytic = codec.grads()[codec.param_offset(layer, c.tensor, h) + e];
      EXPECT_NEAR(analytic, numeric, 1e-4 * (1 + std::abs(numeric)))
          << (e % (d + 1) == d ? "db" : "dpsi") << " " << e / (d + 1) << " head " << h;
      // With r < d every parameter moves the loss (a zero gradient would prove nothing); at
      // r = d, U(θ)U(θ)ᵀ = I + ¼θ⁴A⁴ and dL/dθ is O(θ³): tiny, but it still must match.
      if (c.rank < d) {
        EXPECT_GT(std::abs(numeric), 1e-6) << "a parameter with no gradient proves nothing";
      }
    }
  // Parameters of other keys get no gradient.
  double other = 0;
  for (int h = 0; h < H; ++h)
    for (int e = 0; e < per_head; ++e) other += std::abs(codec.grads()[codec.param_offset(0, c.tensor, h) + e]);
  EXPECT_EQ(other, 0.0);
}

INSTANTIATE_TEST_SUITE_P(KAndV, MosGradcheck,
                         ::testing::Values(Case{KvTensor::k, 3, 5, KFrame::post_rope, false},
                                           Case{KvTensor::k, 3, 5, KFrame::pre_rope, false},
                                           Case{KvTensor::v, 5, 4, KFrame::pre_rope, false},
                                           Case{KvTensor::k, 8, 3, KFrame::pre_rope, false},
                                           Case{KvTensor::k, 3, 5, KFrame::post_rope, true},
                                           Case{KvTensor::k, 3, 5, KFrame::pre_rope, true},
                                           Case{KvTensor::v, 5, 4, KFrame::pre_rope, true},
                                           // Two rotation generators (compression.rotation_params 2).
                                           Case{KvTensor::k, 3, 5, KFrame::post_rope, false, 2},
                                           Case{KvTensor::k, 3, 5, KFrame::pre_rope, true, 2},
                                           Case{KvTensor::v, 5, 4, KFrame::pre_rope, true, 2},
                                           Case{KvTensor::v, 2, 6, KFrame::post_rope, false, 3}));

}  // namespace
}  // namespace lowband::compress
