#pragma once
// A plain float64 forward of the Llama-style decoder, written from the maths
// (naive causal attention over global positions, no kernels), reading the same
// flat parameter layout as lowband::model::Model. Used as the reference for the
// model's forward and as the loss whose finite differences check its gradients.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "runtime/model/model.h"

namespace lowband::model::test {

using Mat = std::vector<double>;  // row-major

struct RefBatch {
  std::vector<int32_t> inputs, targets;  // (B * T)
  std::vector<int64_t> positions;        // (B * T)
  int64_t sequences = 1, tokens = 0;
};

inline TokenBatch token_batch(const RefBatch& b) {
  TokenBatch t;
  t.inputs = b.inputs.data();
  t.targets = b.targets.data();
  t.positions = b.positions.data();
  t.sequences = b.sequences;
  t.tokens = b.tokens;
  return t;
}

// Random ids and targets in [0, vocab); sequence s starts at position
// first_position + 3·s (so positions are global, not row indices).
inline RefBatch random_batch(std::mt19937_64& rng, int64_t sequences, int64_t tokens, int vocab,
                             int64_t first_position) {
  std::uniform_int_distribution<int32_t> id(0, vocab - 1);
  RefBatch b;
  b.sequences = sequences;
  b.tokens = tokens;
  for (int64_t s = 0; s < sequences; ++s)
    for (int64_t t = 0; t < tokens; ++t) {
      b.inputs.push_back(id(rng));
      b.targets.push_back(id(rng));
      b.positions.push_back(first_position + 3 * s + t);
    }
  return b;
}

// y (n, out) = x (n, in) · Wᵀ, W (out, in)
inline Mat ref_linear(const Mat& x, int64_t n, int64_t in, const double* W, int64_t out) {
  Mat y(size_t(n * out), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < out; ++o) {
      double s = 0;
      for (int64_t j = 0; j < in; ++j) s += x[size_t(i * in + j)] * W[o * in + j];
      y[size_t(i * out + o)] = s;
    }
  return y;
}

inline Mat ref_rmsnorm(const Mat& x, int64_t n, int64_t d, const double* w, double eps) {
  Mat y(x.size());
  for (int64_t i = 0; i < n; ++i) {
    double ss = 0;
    for (int64_t j = 0; j < d; ++j) ss += x[size_t(i * d + j)] * x[size_t(i * d + j)];
    const double r = 1.0 / std::sqrt(ss / double(d) + eps);
    for (int64_t j = 0; j < d; ++j) y[size_t(i * d + j)] = x[size_t(i * d + j)] * r * w[j];
  }
  return y;
}

// Llama rotate-half RoPE on (n, heads, hd) in place.
inline void ref_rope(Mat& x, const int64_t* pos, int64_t n, int64_t heads, int64_t hd, double theta) {
  const int64_t half = hd / 2;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      double* v = x.data() + (t * heads + h) * hd;
      for (int64_t i = 0; i < half; ++i) {
        const double angle = double(pos[t]) * std::pow(theta, -2.0 * double(i) / double(hd));
        const double a = v[i], b = v[i + half];
        v[i] = a * std::cos(angle) - b * std::sin(angle);
        v[i + half] = b * std::cos(angle) + a * std::sin(angle);
      }
    }
}

// Per sequence: mean cross-entropy over all valid targets of the batch; logits
// (B*T, V) written when asked.
inline double ref_loss(const Model& model, const std::vector<double>& p, const RefBatch& b,
                       Mat* logits_out = nullptr) {
  const ModelConfig& c = model.config();
  const ParamLayout& L = model.layout();
  const int64_t T = b.tokens, d = c.d_model, hd = c.head_dim(), H = c.heads, KV = c.kv_heads;
  const int64_t dkv = c.d_kv(), f = c.ffn_hidden, V = c.vocab;
  const double eps = model.options().norm_eps, theta = model.options().rope_theta;
  const double scale = 1.0 / std::sqrt(double(hd));
  const double* P = p.data();
  double total = 0;
  int64_t valid = 0;
  if (logits_out) logits_out->assign(size_t(b.sequences * T * V), 0.0);
  for (int64_t s = 0; s < b.sequences; ++s) {
    const int32_t* ids = b.inputs.data() + s * T;
    const int64_t* pos = b.positions.data() + s * T;
    Mat x(size_t(T * d));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < d; ++j) x[size_t(t * d + j)] = P[L.embedding() + ids[t] * d + j];
    for (int l = 0; l < c.layers; ++l) {
      const LayerOffsets& o = L.layer(l);
      const Mat xn = ref_rmsnorm(x, T, d, P + o.attn_norm, eps);
      Mat q = ref_linear(xn, T, d, P + o.wq, d), k = ref_linear(xn, T, d, P + o.wk, dkv);
      const Mat v = ref_linear(xn, T, d, P + o.wv, dkv);
      ref_rope(q, pos, T, H, hd, theta);
      ref_rope(k, pos, T, KV, hd, theta);
      Mat att(size_t(T * d), 0.0);
      for (int64_t h = 0; h < H; ++h) {
        const int64_t g = h / (H / KV);
        for (int64_t i = 0; i < T; ++i) {
          std::vector<double> w(size_t(T), 0.0);
          double mx = -1e300;
          for (int64_t j = 0; j < T; ++j) {
            if (pos[j] > pos[i]) continue;  // causal on global positions
            double sc = 0;
            for (int64_t e = 0; e < hd; ++e) sc += q[size_t((i * H + h) * hd + e)] * k[size_t((j * KV + g) * hd + e)];
            w[size_t(j)] = sc * scale;
            mx = std::max(mx, w[size_t(j)]);
          }
          double z = 0;
          for (int64_t j = 0; j < T; ++j)
            if (pos[j] <= pos[i]) z += std::exp(w[size_t(j)] - mx);
          for (int64_t j = 0; j < T; ++j) {
            if (pos[j] > pos[i]) continue;
            const double pj = std::exp(w[size_t(j)] - mx) / z;
            for (int64_t e = 0; e < hd; ++e) att[size_t((i * H + h) * hd + e)] += pj * v[size_t((j * KV + g) * hd + e)];
          }
        }
      }
      const Mat proj = ref_linear(att, T, d, P + o.wo, d);
      for (size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
      const Mat xn2 = ref_rmsnorm(x, T, d, P + o.mlp_norm, eps);
      const Mat gate = ref_linear(xn2, T, d, P + o.w_gate, f), up = ref_linear(xn2, T, d, P + o.w_up, f);
      Mat hid(gate.size());
      for (size_t i = 0; i < hid.size(); ++i) hid[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
      const Mat down = ref_linear(hid, T, f, P + o.w_down, d);
      for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
    }
    const Mat xf = ref_rmsnorm(x, T, d, P + L.final_norm(), eps);
    const Mat logits = ref_linear(xf, T, d, P + L.lm_head(), V);
    for (int64_t t = 0; t < T; ++t) {
      const double* row = logits.data() + t * V;
      if (logits_out)
        std::copy(row, row + V, logits_out->data() + (s * T + t) * V);
      const int32_t target = b.targets[size_t(s * T + t)];
      if (target < 0) continue;
      double mx = row[0];
      for (int64_t j = 1; j < V; ++j) mx = std::max(mx, row[j]);
      double z = 0;
      for (int64_t j = 0; j < V; ++j) z += std::exp(row[j] - mx);
      total += mx + std::log(z) - row[target];
      ++valid;
    }
  }
  return valid > 0 ? total / double(valid) : 0.0;
}

}  // namespace lowband::model::test
