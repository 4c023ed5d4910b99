// Attention forward and merge against the float64 textbook softmax, and
// blockwise attention + log-sum-exp merge against the whole sequence for the
// block patterns a context-parallel rank meets; the backward bit-reproducible
// across calls and thread counts.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "common/error.h"
#include "kernels/attention.h"
#include "tests/kernels/reference.h"
#include "tests/kernels/test_attention_reference.h"

namespace lowband::kernels::test {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Case {
  int64_t nq, nk, heads, kv_heads, head_dim, q_offset, k_offset;
  bool causal;
};

AttentionShape shape_of(const Case& c) {
  AttentionShape s{c.nq,       c.nk,       c.heads,
                   c.kv_heads, c.head_dim, c.q_offset,
                   c.k_offset, c.causal,   float(1.0 / std::sqrt(double(c.head_dim)))};
  return s;
}

// Compares the kernel's lse with the reference: -inf exactly where the
// reference has -inf, relative error < tol on the finite rest.
void expect_lse_near(const std::vector<float>& lse, const std::vector<double>& ref, double tol) {
  std::vector<double> got_finite, ref_finite;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isinf(ref[i])) {
      EXPECT_EQ(lse[i], kNegInf) << "row " << i << " saw no key";
    } else {
      got_finite.push_back(lse[i]);
      ref_finite.push_back(ref[i]);
    }
  }
  EXPECT_LT(rel_error(got_finite, ref_finite), tol);
}

TEST(AttentionForward, MatchesFloat64SoftmaxOnManyShapes) {
  // Expectation: out and lse equal softmax(scale * q k^T) v in float64 to fp32
  // rounding (rel. error < 1e-5), for tile-unaligned sizes, GQA, offsets, and
  // causal on and off.
  const Case cases[] = {
      {1, 1, 1, 1, 8, 0, 0, true},        {37, 53, 4, 2, 64, 16, 0, true},
      {300, 300, 2, 1, 128, 0, 0, true},  {129, 257, 3, 3, 40, 0, 0, false},
      {200, 517, 4, 1, 64, 317, 0, true}, {17, 600, 2, 2, 16, 1000, 450, true},
      {260, 130, 8, 2, 32, 130, 0, true}, {5, 5, 1, 1, 3, 2, 0, true},
      {4, 0, 2, 1, 8, 0, 0, true},  // an empty key block: out 0, lse -inf
  };
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  for (const Case& c : cases) {
    SCOPED_TRACE("nq " + std::to_string(c.nq) + " nk " + std::to_string(c.nk) + " heads " +
                 std::to_string(c.heads) + "/" + std::to_string(c.kv_heads) + " hd " +
                 std::to_string(c.head_dim));
    const AttentionShape s = shape_of(c);
    auto q = random_floats(rng, c.nq * c.heads * c.head_dim, -2, 2);
    auto k = random_floats(rng, c.nk * c.kv_heads * c.head_dim, -2, 2);
    auto v = random_floats(rng, c.nk * c.kv_heads * c.head_dim);
    std::vector<float> out(q.size()), lse(c.heads * c.nq);
    poison(out);
    poison(lse);
    cpu::attention_forward(s, q.data(), k.data(), v.data(), out.data(), lse.data());
    const RefAttention ref = ref_attention_forward(s, to_double(q), to_double(k), to_double(v));
    EXPECT_LT(rel_error(out, ref.out), 1e-5);
    expect_lse_near(lse, ref.lse, 1e-5);
  }
}

TEST(AttentionForward, RowsThatSeeNoKeyGiveZeroAndMinusInfinity) {
  // Expectation: keys at positions 100.. are all after queries 0..49, so
  // under the causal mask every row attends nothing: out = 0, lse = -inf.
  Rng rng(7);
  const AttentionShape s{50, 70, 2, 1, 16, 0, 100, true, 0.25f};
  auto q = random_floats(rng, 50 * 2 * 16), k = random_floats(rng, 70 * 16),
       v = random_floats(rng, 70 * 16);
  std::vector<float> out(q.size()), lse(2 * 50);
  poison(out);
  poison(lse);
  cpu::attention_forward(s, q.data(), k.data(), v.data(), out.data(), lse.data());
  for (float o : out) ASSERT_EQ(o, 0.0f);
  for (float l : lse) ASSERT_EQ(l, kNegInf);
}

TEST(AttentionForward, RejectsInconsistentShapes) {
  std::vector<float> buf(64);
  AttentionShape s{2, 2, 3, 2, 4, 0, 0, true, 0.5f};  // 2 does not divide 3
  EXPECT_THROW(
      cpu::attention_forward(s, buf.data(), buf.data(), buf.data(), buf.data(), buf.data()),
      InputError);
  try {
    cpu::attention_forward(s, buf.data(), buf.data(), buf.data(), buf.data(), buf.data());
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "attention_forward.kv_heads");
  }
  s.kv_heads = 1;
  s.head_dim = 0;
  EXPECT_THROW(
      cpu::attention_forward(s, buf.data(), buf.data(), buf.data(), buf.data(), buf.data()),
      InputError);
}

TEST(AttentionMerge, EqualsLogSumExpFormulaAndIgnoresEmptySides) {
  // Expectation (float64): lse = log(e^a + e^b), out = e^(a-lse) out_a + e^(b-lse) out_b;
  // a side with lse = -inf contributes nothing, even when its out is NaN.
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const int64_t nq = 23, heads = 3, hd = 19;
  auto oa = random_floats(rng, nq * heads * hd), ob = random_floats(rng, nq * heads * hd);
  auto la = random_floats(rng, heads * nq, -5, 5), lb = random_floats(rng, heads * nq, -5, 5);
  // Row 0 of head 0: a empty. Row 1 of head 1: b empty (with NaN out). Row 2: both empty.
  la[0] = kNegInf;
  lb[1 * nq + 1] = kNegInf;
  for (int64_t d = 0; d < hd; ++d) ob[(1 * heads + 1) * hd + d] = std::nanf("");
  la[2] = lb[2] = kNegInf;
  std::vector<double> ref_out(oa.size()), ref_lse(la.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < nq; ++i) {
      const double a = la[h * nq + i], b = lb[h * nq + i];
      const double wa = std::isinf(a) ? 0.0 : std::exp(a), wb = std::isinf(b) ? 0.0 : std::exp(b);
      ref_lse[h * nq + i] = (wa + wb) > 0 ? std::log(wa + wb) : -INFINITY;
      for (int64_t d = 0; d < hd; ++d) {
        const size_t e = (i * heads + h) * hd + d;
        ref_out[e] = (wa > 0 ? wa * oa[e] : 0.0) + (wb > 0 ? wb * ob[e] : 0.0);
        if (wa + wb > 0)
          ref_out[e] /= (wa + wb);
        else
          ref_out[e] = oa[e];  // both empty: out_a stays as it was
      }
    }
  cpu::attention_merge(nq, heads, hd, oa.data(), la.data(), ob.data(), lb.data());
  EXPECT_LT(rel_error(oa, ref_out), 1e-6);
  expect_lse_near(la, ref_lse, 1e-6);
}

// A context-parallel rank's view: its query chunks (global ranges) attend every
// key block (global ranges) through separate calls, merged by log-sum-exp.
using Range = std::pair<int64_t, int64_t>;  // [begin, end) global positions

void expect_blockwise_equals_whole(int64_t T, int64_t heads, int64_t kv_heads, int64_t hd,
                                   const std::vector<Range>& q_chunks,
                                   const std::vector<Range>& k_blocks, uint64_t seed) {
  Rng rng(seed);
  const int64_t qw = heads * hd, kw = kv_heads * hd;
  auto q = random_floats(rng, T * qw, -2, 2), k = random_floats(rng, T * kw, -2, 2),
       v = random_floats(rng, T * kw);
  const float scale = float(1.0 / std::sqrt(double(hd)));
  const AttentionShape whole{T, T, heads, kv_heads, hd, 0, 0, true, scale};
  const RefAttention ref = ref_attention_forward(whole, to_double(q), to_double(k), to_double(v));
  for (const Range& qc : q_chunks) {
    const int64_t nq = qc.second - qc.first;
    std::vector<float> out(nq * qw), lse(heads * nq), part(nq * qw), part_lse(heads * nq);
    bool first = true;
    for (const Range& kb : k_blocks) {
      const AttentionShape s{
          nq, kb.second - kb.first, heads, kv_heads, hd, qc.first, kb.first, true, scale};
      poison(part);
      poison(part_lse);
      cpu::attention_forward(s, q.data() + qc.first * qw, k.data() + kb.first * kw,
                             v.data() + kb.first * kw, part.data(), part_lse.data());
      if (first) {
        out = part;
        lse = part_lse;
        first = false;
      } else {
        cpu::attention_merge(nq, heads, hd, out.data(), lse.data(), part.data(), part_lse.data());
      }
    }
    std::vector<double> ref_out(ref.out.begin() + qc.first * qw, ref.out.begin() + qc.second * qw);
    std::vector<double> ref_lse(heads * nq);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < nq; ++i) ref_lse[h * nq + i] = ref.lse[h * T + qc.first + i];
    SCOPED_TRACE("query chunk [" + std::to_string(qc.first) + ", " + std::to_string(qc.second) +
                 ")");
    EXPECT_LT(rel_error(out, ref_out), 1e-5);
    expect_lse_near(lse, ref_lse, 1e-5);
  }
}

std::vector<Range> even_split(int64_t T, int64_t size) {
  std::vector<Range> r;
  for (int64_t b = 0; b < T; b += size) r.push_back({b, std::min(T, b + size)});
  return r;
}

TEST(AttentionBlockwise, ContiguousChunksMergedEqualWholeSequence) {
  // Expectation: for P = 4 contiguous chunks of T = 403 (the last one short)
  // and key blocks of 1, 7, 64, 101 and 403 tokens (blocks after a chunk are
  // fully masked), the merged result equals the whole-sequence attention.
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  const int64_t T = 403;
  for (int64_t kb : {1, 7, 64, 101, 403}) {
    SCOPED_TRACE("key block " + std::to_string(kb));
    expect_blockwise_equals_whole(T, 4, 2, 16, even_split(T, 101), even_split(T, kb), seed + kb);
  }
}

TEST(AttentionBlockwise, ZigzagChunksMergedEqualWholeSequence) {
  // Expectation: with P = 3 ranks and T = 2P * 47, rank r holds chunks r and
  // 2P-1-r; attending both to the K/V chunks of every rank (in ring order,
  // starting at its own) and merging equals the whole-sequence attention.
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  const int64_t P = 3, C = 47, T = 2 * P * C;
  auto chunk = [&](int64_t c) { return Range{c * C, (c + 1) * C}; };
  for (int64_t r = 0; r < P; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    std::vector<Range> k_blocks;
    for (int64_t step = 0; step < P; ++step) {
      const int64_t owner = (r + step) % P;
      k_blocks.push_back(chunk(owner));
      k_blocks.push_back(chunk(2 * P - 1 - owner));
    }
    expect_blockwise_equals_whole(T, 2, 1, 24, {chunk(r), chunk(2 * P - 1 - r)}, k_blocks,
                                  seed + r);
  }
}

// Elements of a and b whose bit patterns differ.
int64_t bitwise_mismatches(const std::vector<float>& a, const std::vector<float>& b) {
  int64_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

TEST(AttentionBackward, BitIdenticalAcrossCallsAndThreadCounts) {
  // Expectation: on shapes above the kernel's parallel threshold (nq·nk·heads·
  // head_dim >= 2^20; several key tiles and kv heads, so the work is split
  // among threads), causal and not, and one below it, attention_backward
  // accumulates the same dq, dk, dv bit for bit on every call -- five calls at
  // 2 threads -- and at 1 and 3 threads too.
  const Case cases[] = {
      {700, 700, 4, 2, 40, 0, 0, true},     // 3 key tiles, the last partial; GQA
      {300, 900, 4, 4, 32, 0, 0, false},    // 4 key tiles
      {500, 1300, 2, 1, 64, 800, 0, true},  // keys start before the queries; MQA
      {120, 300, 2, 1, 16, 180, 0, true},   // below the threshold: one thread
  };
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const int saved_threads = omp_get_max_threads();
  for (const Case& c : cases) {
    SCOPED_TRACE("nq " + std::to_string(c.nq) + " nk " + std::to_string(c.nk) +
                 (c.causal ? " causal" : " not causal"));
    const AttentionShape s = shape_of(c);
    auto q = random_floats(rng, c.nq * c.heads * c.head_dim, -2, 2);
    auto k = random_floats(rng, c.nk * c.kv_heads * c.head_dim, -2, 2);
    auto v = random_floats(rng, c.nk * c.kv_heads * c.head_dim);
    auto dout = random_floats(rng, q.size());
    // Existing gradients to accumulate into (the kernel adds to dq, dk, dv).
    const auto dq0 = random_floats(rng, q.size()), dk0 = random_floats(rng, k.size()),
               dv0 = random_floats(rng, v.size());
    std::vector<float> out(q.size()), lse(c.heads * c.nq), delta(c.heads * c.nq);
    cpu::attention_forward(s, q.data(), k.data(), v.data(), out.data(), lse.data());
    cpu::attention_backward_delta(c.nq, c.heads, c.head_dim, out.data(), dout.data(), delta.data());
    auto backward = [&](int threads, std::vector<float>& dq, std::vector<float>& dk,
                        std::vector<float>& dv) {
      omp_set_num_threads(threads);
      dq = dq0;
      dk = dk0;
      dv = dv0;
      cpu::attention_backward(s, q.data(), k.data(), v.data(), lse.data(), delta.data(),
                              dout.data(), dq.data(), dk.data(), dv.data());
    };
    std::vector<float> dq_ref, dk_ref, dv_ref, dq, dk, dv;
    backward(2, dq_ref, dk_ref, dv_ref);
    for (int threads : {2, 2, 2, 2, 1, 3}) {
      SCOPED_TRACE(std::to_string(threads) + " threads vs the first call at 2");
      backward(threads, dq, dk, dv);
      EXPECT_EQ(bitwise_mismatches(dq, dq_ref), 0);
      EXPECT_EQ(bitwise_mismatches(dk, dk_ref), 0);
      EXPECT_EQ(bitwise_mismatches(dv, dv_ref), 0);
    }
  }
  omp_set_num_threads(saved_threads);
}

}  // namespace
}  // namespace lowband::kernels::test
