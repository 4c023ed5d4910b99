#pragma once
// Plain float64 attention for the attention tests: the textbook softmax over
// the full score row (no tiling, no online rescaling), so it shares nothing
// with the kernel under test but the layout.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/attention.h"

namespace lowband::kernels::test {

struct RefAttention {
  std::vector<double> out;  // (nq, heads, head_dim)
  std::vector<double> lse;  // (heads, nq)
};

inline bool ref_attends(const AttentionShape& s, int64_t i, int64_t j) {
  return !s.causal || s.k_offset + j <= s.q_offset + i;
}

inline RefAttention ref_attention_forward(const AttentionShape& s, const std::vector<double>& q,
                                          const std::vector<double>& k,
                                          const std::vector<double>& v) {
  const int64_t hd = s.head_dim, group = s.heads / s.kv_heads;
  RefAttention r{std::vector<double>(s.nq * s.heads * hd, 0.0),
                 std::vector<double>(s.heads * s.nq)};
  std::vector<double> score(s.nk);
  for (int64_t h = 0; h < s.heads; ++h) {
    const int64_t hk = h / group;
    for (int64_t i = 0; i < s.nq; ++i) {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < s.nk; ++j) {
        if (!ref_attends(s, i, j)) continue;
        double dot = 0.0;
        for (int64_t d = 0; d < hd; ++d)
          dot += q[(i * s.heads + h) * hd + d] * k[(j * s.kv_heads + hk) * hd + d];
        score[j] = double(s.scale) * dot;
        m = std::max(m, score[j]);
      }
      if (m == -std::numeric_limits<double>::infinity()) {  // no key: out 0, lse -inf
        r.lse[h * s.nq + i] = m;
        continue;
      }
      double sum = 0.0;
      for (int64_t j = 0; j < s.nk; ++j)
        if (ref_attends(s, i, j)) sum += std::exp(score[j] - m);
      for (int64_t j = 0; j < s.nk; ++j) {
        if (!ref_attends(s, i, j)) continue;
        const double p = std::exp(score[j] - m) / sum;
        for (int64_t d = 0; d < hd; ++d)
          r.out[(i * s.heads + h) * hd + d] += p * v[(j * s.kv_heads + hk) * hd + d];
      }
      r.lse[h * s.nq + i] = m + std::log(sum);
    }
  }
  return r;
}

// Analytic gradient of L = sum(dout * out) for one block that holds every key
// of its queries (so its own lse is the final one). Checked against finite
// differences in test_attention_backward.cpp before it is used as a reference.
inline void ref_attention_backward(const AttentionShape& s, const std::vector<double>& q,
                                   const std::vector<double>& k, const std::vector<double>& v,
                                   const std::vector<double>& dout, std::vector<double>& dq,
                                   std::vector<double>& dk, std::vector<double>& dv) {
  const int64_t hd = s.head_dim, group = s.heads / s.kv_heads;
  const RefAttention f = ref_attention_forward(s, q, k, v);
  dq.assign(q.size(), 0.0);
  dk.assign(k.size(), 0.0);
  dv.assign(v.size(), 0.0);
  for (int64_t h = 0; h < s.heads; ++h) {
    const int64_t hk = h / group;
    for (int64_t i = 0; i < s.nq; ++i) {
      const double L = f.lse[h * s.nq + i];
      if (L == -std::numeric_limits<double>::infinity()) continue;
      const double* o = &f.out[(i * s.heads + h) * hd];
      const double* g = &dout[(i * s.heads + h) * hd];
      double D = 0.0;
      for (int64_t d = 0; d < hd; ++d) D += o[d] * g[d];
      for (int64_t j = 0; j < s.nk; ++j) {
        if (!ref_attends(s, i, j)) continue;
        const double* qi = &q[(i * s.heads + h) * hd];
        const double* kj = &k[(j * s.kv_heads + hk) * hd];
        const double* vj = &v[(j * s.kv_heads + hk) * hd];
        double dot = 0.0, dp = 0.0;
        for (int64_t d = 0; d < hd; ++d) {
          dot += qi[d] * kj[d];
          dp += g[d] * vj[d];
        }
        const double p = std::exp(double(s.scale) * dot - L);
        const double ds = p * (dp - D) * double(s.scale);
        for (int64_t d = 0; d < hd; ++d) {
          dv[(j * s.kv_heads + hk) * hd + d] += p * g[d];
          dq[(i * s.heads + h) * hd + d] += ds * kj[d];
          dk[(j * s.kv_heads + hk) * hd + d] += ds * qi[d];
        }
      }
    }
  }
}

}  // namespace lowband::kernels::test
