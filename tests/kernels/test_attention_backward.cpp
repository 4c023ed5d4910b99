// Attention backward: gradient check by central finite differences on the
// float64 reference, agreement with the float64 analytic gradient on larger
// shapes, and block pairs summed equal to the whole-sequence backward.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "kernels/attention.h"
#include "tests/kernels/reference.h"
#include "tests/kernels/test_attention_reference.h"

namespace lowband::kernels::test {
namespace {

struct Grads {
  std::vector<float> dq, dk, dv;
};

// Whole-block CPU backward: forward for out/lse, delta, then one backward call.
Grads cpu_backward(const AttentionShape& s, const std::vector<float>& q,
                   const std::vector<float>& k, const std::vector<float>& v,
                   const std::vector<float>& dout) {
  std::vector<float> out(q.size()), lse(s.heads * s.nq), delta(s.heads * s.nq);
  cpu::attention_forward(s, q.data(), k.data(), v.data(), out.data(), lse.data());
  poison(delta);
  cpu::attention_backward_delta(s.nq, s.heads, s.head_dim, out.data(), dout.data(), delta.data());
  Grads g{std::vector<float>(q.size(), 0.0f), std::vector<float>(k.size(), 0.0f),
          std::vector<float>(v.size(), 0.0f)};
  cpu::attention_backward(s, q.data(), k.data(), v.data(), lse.data(), delta.data(), dout.data(),
                          g.dq.data(), g.dk.data(), g.dv.data());
  return g;
}

TEST(AttentionBackward, MatchesFiniteDifferencesOfFloat64Reference) {
  // Expectation: with L = sum(dout * attention(q, k, v)) in float64, the central
  // differences (h = 1e-4, error ~1e-8) equal both the kernel's dq, dk, dv
  // (fp32: rel. error < 1e-5) and the float64 analytic reference (< 1e-7), on a
  // causal GQA block whose keys start before its queries (partial masking).
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const AttentionShape s{9, 13, 4, 2, 6, 5, 1, true, 0.4f};
  auto q = random_floats(rng, s.nq * s.heads * s.head_dim);
  auto k = random_floats(rng, s.nk * s.kv_heads * s.head_dim);
  auto v = random_floats(rng, s.nk * s.kv_heads * s.head_dim);
  auto dout = random_floats(rng, q.size());
  const auto qd = to_double(q), kd = to_double(k), vd = to_double(v), gd = to_double(dout);
  auto loss = [&](const std::vector<double>& qq, const std::vector<double>& kk,
                  const std::vector<double>& vv) {
    return dot(ref_attention_forward(s, qq, kk, vv).out, gd);
  };
  const auto fd_q =
      numeric_gradient([&](const std::vector<double>& x) { return loss(x, kd, vd); }, qd);
  const auto fd_k =
      numeric_gradient([&](const std::vector<double>& x) { return loss(qd, x, vd); }, kd);
  const auto fd_v =
      numeric_gradient([&](const std::vector<double>& x) { return loss(qd, kd, x); }, vd);

  const Grads g = cpu_backward(s, q, k, v, dout);
  EXPECT_LT(rel_error(g.dq, fd_q), 1e-5);
  EXPECT_LT(rel_error(g.dk, fd_k), 1e-5);
  EXPECT_LT(rel_error(g.dv, fd_v), 1e-5);

  std::vector<double> rq, rk, rv;
  ref_attention_backward(s, qd, kd, vd, gd, rq, rk, rv);
  EXPECT_LT(rel_error(rq, fd_q), 1e-7);
  EXPECT_LT(rel_error(rk, fd_k), 1e-7);
  EXPECT_LT(rel_error(rv, fd_v), 1e-7);
}

TEST(AttentionBackward, MatchesFloat64AnalyticGradientOnTiledShapes) {
  // Expectation: on shapes spanning several query and key tiles (not multiples
  // of the tile or vector width), the kernel's gradients equal the float64
  // analytic gradient (itself checked above) to rel. error < 1e-5.
  struct C {
    int64_t nq, nk, heads, kv, hd, qo, ko;
    bool causal;
  };
  const C cases[] = {{300, 300, 2, 1, 64, 0, 0, true},
                     {131, 517, 4, 2, 40, 386, 0, true},
                     {77, 290, 3, 3, 17, 0, 0, false}};
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  for (const C& c : cases) {
    const AttentionShape s{c.nq, c.nk,     c.heads,
                           c.kv, c.hd,     c.qo,
                           c.ko, c.causal, float(1.0 / std::sqrt(double(c.hd)))};
    auto q = random_floats(rng, c.nq * c.heads * c.hd, -2, 2);
    auto k = random_floats(rng, c.nk * c.kv * c.hd, -2, 2);
    auto v = random_floats(rng, c.nk * c.kv * c.hd), dout = random_floats(rng, q.size());
    std::vector<double> rq, rk, rv;
    ref_attention_backward(s, to_double(q), to_double(k), to_double(v), to_double(dout), rq, rk,
                           rv);
    const Grads g = cpu_backward(s, q, k, v, dout);
    SCOPED_TRACE("nq " + std::to_string(c.nq) + " nk " + std::to_string(c.nk));
    EXPECT_LT(rel_error(g.dq, rq), 1e-5);
    EXPECT_LT(rel_error(g.dk, rk), 1e-5);
    EXPECT_LT(rel_error(g.dv, rv), 1e-5);
  }
}

TEST(AttentionBackward, AccumulatesIntoExistingGradients) {
  // Expectation: dq, dk, dv are accumulated, not overwritten: starting from
  // G0 (random), one call leaves G0 + g, where g is the gradient from zero
  // (rel. error < 1e-6: one fp32 addition per element).
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const AttentionShape s{300, 280, 4, 2, 32, 20, 0, true, 0.2f};
  auto q = random_floats(rng, s.nq * s.heads * s.head_dim), dout = random_floats(rng, q.size());
  auto k = random_floats(rng, s.nk * s.kv_heads * s.head_dim), v = random_floats(rng, k.size());
  const Grads g = cpu_backward(s, q, k, v, dout);
  std::vector<float> out(q.size()), lse(s.heads * s.nq), delta(s.heads * s.nq);
  cpu::attention_forward(s, q.data(), k.data(), v.data(), out.data(), lse.data());
  cpu::attention_backward_delta(s.nq, s.heads, s.head_dim, out.data(), dout.data(), delta.data());
  auto dq = random_floats(rng, q.size()), dk = random_floats(rng, k.size()),
       dv = random_floats(rng, v.size());
  std::vector<double> want_q(dq.size()), want_k(dk.size()), want_v(dv.size());
  for (size_t e = 0; e < dq.size(); ++e) want_q[e] = double(dq[e]) + g.dq[e];
  for (size_t e = 0; e < dk.size(); ++e) want_k[e] = double(dk[e]) + g.dk[e];
  for (size_t e = 0; e < dv.size(); ++e) want_v[e] = double(dv[e]) + g.dv[e];
  cpu::attention_backward(s, q.data(), k.data(), v.data(), lse.data(), delta.data(), dout.data(),
                          dq.data(), dk.data(), dv.data());
  EXPECT_LT(rel_error(dq, want_q), 1e-6);
  EXPECT_LT(rel_error(dk, want_k), 1e-6);
  EXPECT_LT(rel_error(dv, want_v), 1e-6);
}

TEST(AttentionBackward, ZigzagBlockPairsSumToWholeSequenceGradient) {
  // Expectation: P = 2 ranks, T = 4 * 45, zigzag chunks. Each query chunk's
  // final out/lse come from blockwise forward + merge; the backward run per
  // (query chunk, key chunk) pair with that final lse, accumulated, equals the
  // float64 whole-sequence gradient (rel. error < 1e-5). Pairs that are fully
  // masked must add nothing.
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const int64_t P = 2, C = 45, T = 2 * P * C, heads = 4, kv = 2, hd = 32;
  const int64_t qw = heads * hd, kw = kv * hd;
  const float scale = float(1.0 / std::sqrt(double(hd)));
  auto q = random_floats(rng, T * qw, -2, 2), k = random_floats(rng, T * kw, -2, 2);
  auto v = random_floats(rng, T * kw), dout = random_floats(rng, T * qw);
  std::vector<float> dq(q.size(), 0.0f), dk(k.size(), 0.0f), dv(v.size(), 0.0f);
  for (int64_t qc = 0; qc < 2 * P; ++qc) {
    const int64_t q0 = qc * C;
    std::vector<float> out(C * qw), lse(heads * C), part(C * qw), part_lse(heads * C),
        delta(heads * C);
    for (int64_t kc = 0; kc < 2 * P; ++kc) {
      const AttentionShape s{C, C, heads, kv, hd, q0, kc * C, true, scale};
      cpu::attention_forward(s, q.data() + q0 * qw, k.data() + kc * C * kw, v.data() + kc * C * kw,
                             kc == 0 ? out.data() : part.data(),
                             kc == 0 ? lse.data() : part_lse.data());
      if (kc > 0)
        cpu::attention_merge(C, heads, hd, out.data(), lse.data(), part.data(), part_lse.data());
    }
    cpu::attention_backward_delta(C, heads, hd, out.data(), dout.data() + q0 * qw, delta.data());
    for (int64_t kc = 0; kc < 2 * P; ++kc) {
      const AttentionShape s{C, C, heads, kv, hd, q0, kc * C, true, scale};
      cpu::attention_backward(s, q.data() + q0 * qw, k.data() + kc * C * kw, v.data() + kc * C * kw,
                              lse.data(), delta.data(), dout.data() + q0 * qw, dq.data() + q0 * qw,
                              dk.data() + kc * C * kw, dv.data() + kc * C * kw);
    }
  }
  const AttentionShape whole{T, T, heads, kv, hd, 0, 0, true, scale};
  std::vector<double> rq, rk, rv;
  ref_attention_backward(whole, to_double(q), to_double(k), to_double(v), to_double(dout), rq, rk,
                         rv);
  EXPECT_LT(rel_error(dq, rq), 1e-5);
  EXPECT_LT(rel_error(dk, rk), 1e-5);
  EXPECT_LT(rel_error(dv, rv), 1e-5);
}

}  // namespace
}  // namespace lowband::kernels::test
