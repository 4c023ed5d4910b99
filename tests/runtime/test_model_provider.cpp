// The attention step is pluggable: a provider that splits each sequence into
// chunks and merges the blockwise results by log-sum-exp (what a context-
// parallel rank does with remote K/V) gives the model the same loss and
// gradients as LocalAttention.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "kernels/attention.h"
#include "runtime/model/model.h"
#include "tests/kernels/reference.h"
#include "tests/runtime/test_model_reference.h"

namespace lowband::model::test {
namespace {

using kernels::test::rel_error;

// Chunk c of a T-token sequence: [c·T/C, (c+1)·T/C).
class ChunkedAttention : public AttentionProvider {
 public:
  explicit ChunkedAttention(int64_t chunks) : chunks_(chunks) {}
  int forward_calls = 0, backward_calls = 0;

  void forward(int layer, const AttentionBatch& b, const float* q, const float* k, const float* v,
               float* out) override {
    ++forward_calls;
    auto& lse = lse_[layer];
    lse.assign(size_t(b.sequences * b.heads * b.tokens), 0.0f);
    for (int64_t s = 0; s < b.sequences; ++s)
      for (int64_t ci = 0; ci < chunks_; ++ci) {
        const auto [q0, q1] = range(b, ci);
        std::vector<float> o(size_t((q1 - q0) * qrow(b))), l(size_t(b.heads * (q1 - q0)));
        std::vector<float> ob(o.size()), lb(l.size());
        for (int64_t cj = 0; cj <= ci; ++cj) {
          const auto [k0, k1] = range(b, cj);
          const auto sh = shape(b, s, q0, q1, k0, k1);
          kernels::cpu::attention_forward(sh, q + (s * b.tokens + q0) * qrow(b),
                                          k + (s * b.tokens + k0) * kvrow(b),
                                          v + (s * b.tokens + k0) * kvrow(b),
                                          cj == 0 ? o.data() : ob.data(), cj == 0 ? l.data() : lb.data());
          if (cj > 0) kernels::cpu::attention_merge(q1 - q0, b.heads, b.head_dim, o.data(), l.data(), ob.data(), lb.data());
        }
        std::copy(o.begin(), o.end(), out + (s * b.tokens + q0) * qrow(b));
        for (int64_t h = 0; h < b.heads; ++h)
          std::copy(l.begin() + h * (q1 - q0), l.begin() + (h + 1) * (q1 - q0),
                    lse.begin() + (s * b.heads + h) * b.tokens + q0);
      }
  }

  void backward(int layer, const AttentionBatch& b, const float* q, const float* k, const float* v,
                const float* out, const float* dout, float* dq, float* dk, float* dv) override {
    ++backward_calls;
    std::fill(dq, dq + b.rows() * qrow(b), 0.0f);
    std::fill(dk, dk + b.rows() * kvrow(b), 0.0f);
    std::fill(dv, dv + b.rows() * kvrow(b), 0.0f);
    for (int64_t s = 0; s < b.sequences; ++s)
      for (int64_t ci = 0; ci < chunks_; ++ci) {
        const auto [q0, q1] = range(b, ci);
        const int64_t nq = q1 - q0, qoff = (s * b.tokens + q0) * qrow(b);
        std::vector<float> lse(size_t(b.heads * nq)), delta(lse.size());
        for (int64_t h = 0; h < b.heads; ++h)
          for (int64_t i = 0; i < nq; ++i)
            lse[size_t(h * nq + i)] = lse_[layer][size_t((s * b.heads + h) * b.tokens + q0 + i)];
        kernels::cpu::attention_backward_delta(nq, b.heads, b.head_dim, out + qoff, dout + qoff, delta.data());
        for (int64_t cj = 0; cj <= ci; ++cj) {
          const auto [k0, k1] = range(b, cj);
          const int64_t koff = (s * b.tokens + k0) * kvrow(b);
          kernels::cpu::attention_backward(shape(b, s, q0, q1, k0, k1), q + qoff, k + koff, v + koff,
                                           lse.data(), delta.data(), dout + qoff, dq + qoff, dk + koff,
                                           dv + koff);
        }
      }
  }

 private:
  static int64_t qrow(const AttentionBatch& b) { return b.heads * b.head_dim; }
  static int64_t kvrow(const AttentionBatch& b) { return b.kv_heads * b.head_dim; }
  std::pair<int64_t, int64_t> range(const AttentionBatch& b, int64_t c) const {
    return {c * b.tokens / chunks_, (c + 1) * b.tokens / chunks_};
  }
  static kernels::AttentionShape shape(const AttentionBatch& b, int64_t s, int64_t q0, int64_t q1,
                                       int64_t k0, int64_t k1) {
    kernels::AttentionShape sh;
    sh.nq = q1 - q0;
    sh.nk = k1 - k0;
    sh.heads = b.heads;
    sh.kv_heads = b.kv_heads;
    sh.head_dim = b.head_dim;
    sh.q_offset = b.positions[s * b.tokens + q0];
    sh.k_offset = b.positions[s * b.tokens + k0];
    sh.scale = float(1.0 / std::sqrt(double(b.head_dim)));
    return sh;
  }
  int64_t chunks_;
  std::map<int, std::vector<float>> lse_;
};

TEST(ModelAttentionProvider, ChunkedLseMergeEqualsLocalAttention) {
  // Expectation: splitting each 13-token sequence into 3 uneven chunks and
  // merging by log-sum-exp changes only the fp32 summation order: loss equal to
  // relative 1e-6, every gradient to relative 1e-5; the provider is called once
  // per layer each way.
  ModelConfig c;
  c.layers = 2;
  c.d_model = 32;
  c.heads = 4;
  c.kv_heads = 2;
  c.ffn_hidden = 48;
  c.vocab = 19;
  std::mt19937_64 rng(99);
  const RefBatch b = random_batch(rng, 2, 13, c.vocab, 100);
  Model local(c, 5), chunked(c, 5);
  LocalAttention la;
  ChunkedAttention ca(3);
  const float l1 = local.forward_backward(token_batch(b), la);
  const float l2 = chunked.forward_backward(token_batch(b), ca);
  EXPECT_NEAR(l2, l1, 1e-6 * l1);
  EXPECT_EQ(ca.forward_calls, c.layers);
  EXPECT_EQ(ca.backward_calls, c.layers);
  for (const auto& t : local.layout().tensors())
    EXPECT_LT(rel_error(chunked.grads() + t.offset, local.grads() + t.offset, size_t(t.count())), 1e-5)
        << t.name;
}

}  // namespace
}  // namespace lowband::model::test
