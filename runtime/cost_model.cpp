#include "runtime/cost_model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"

namespace lowband {

double ModelConfig::parameters() const {
  return layers * cost::layer_parameters(*this) + cost::embedding_parameters(*this) +
         cost::head_parameters(*this);
}

namespace cost {

double dtype_bytes(sim::DType dtype) {
  switch (dtype) {
    case sim::DType::fp32:
    case sim::DType::tf32: return 4;
    case sim::DType::bf16:
    case sim::DType::fp16: return 2;
  }
  return 4;
}

Cost matmul(double n, double a, double b, double elem_bytes) {
  return {2.0 * n * a * b, (n * a + a * b + n * b) * elem_bytes};
}

namespace {
// Σ_{a <= x} clamp(a, 0, len): the causal pairs of queries whose "keys visible
// inside the block" count runs up to x.
double clamped_prefix(int64_t x, int64_t len) {
  if (x <= 0) return 0;
  const double xd = static_cast<double>(x), ld = static_cast<double>(len);
  if (x <= len) return xd * (xd + 1) / 2;
  return ld * (ld + 1) / 2 + (xd - ld) * ld;
}
}  // namespace

double causal_pairs(int64_t q_begin, int64_t q_end, int64_t k_begin, int64_t k_end) {
  if (q_end <= q_begin || k_end <= k_begin) return 0;
  // Query q sees clamp(q + 1 - k_begin, 0, len) keys of the block; sum over q.
  const int64_t len = k_end - k_begin;
  const int64_t a0 = q_begin + 1 - k_begin, a1 = q_end - k_begin;  // a for the first/last query
  return clamped_prefix(a1, len) - clamped_prefix(a0 - 1, len);
}

Cost rmsnorm_forward(const ModelConfig& m, double tokens, double elem_bytes) {
  const double d = m.d_model;
  // square, sum, scale by rsqrt, multiply by the weight: about 4 FLOPs per element.
  return {4.0 * tokens * d, (2.0 * tokens * d + d) * elem_bytes};
}

Cost qkv_forward(const ModelConfig& m, double tokens, double elem_bytes) {
  return matmul(tokens, m.d_model, m.d_model + 2.0 * m.d_kv(), elem_bytes);
}

Cost out_proj_forward(const ModelConfig& m, double tokens, double elem_bytes) {
  return matmul(tokens, m.d_model, m.d_model, elem_bytes);
}

Cost mlp_forward(const ModelConfig& m, double tokens, double elem_bytes) {
  // gate and up (d -> ffn), down (ffn -> d); the SwiGLU product is fused and not counted.
  return matmul(tokens, m.d_model, m.ffn_hidden, elem_bytes) * 2.0 +
         matmul(tokens, m.ffn_hidden, m.d_model, elem_bytes);
}

Cost embedding_forward(const ModelConfig& m, double tokens, double elem_bytes) {
  return {0.0, 2.0 * tokens * m.d_model * elem_bytes};  // gather rows, write them
}

Cost lm_head_forward(const ModelConfig& m, double tokens, double elem_bytes) {
  // logits, then softmax cross-entropy reading and writing the logits once more.
  Cost c = matmul(tokens, m.d_model, m.vocab, elem_bytes);
  c.bytes += 2.0 * tokens * m.vocab * elem_bytes;
  return c;
}

Cost pre_attention_forward(const ModelConfig& m, double tokens, double elem_bytes) {
  return rmsnorm_forward(m, tokens, elem_bytes) + qkv_forward(m, tokens, elem_bytes);
}

Cost post_attention_forward(const ModelConfig& m, double tokens, double elem_bytes) {
  return out_proj_forward(m, tokens, elem_bytes) + rmsnorm_forward(m, tokens, elem_bytes) +
         mlp_forward(m, tokens, elem_bytes);
}

Cost head_forward(const ModelConfig& m, double tokens, double elem_bytes) {
  return rmsnorm_forward(m, tokens, elem_bytes) + lm_head_forward(m, tokens, elem_bytes);
}

Cost attention_forward(const ModelConfig& m, double pairs, double q_tokens, double k_tokens,
                       double elem_bytes) {
  if (pairs <= 0) return {};
  const double flops = 4.0 * pairs * m.head_dim() * m.heads;
  // read Q, K, V; write O; merge with the running output (read + write O).
  const double bytes = (4.0 * q_tokens * m.d_model + 2.0 * k_tokens * m.d_kv()) * elem_bytes;
  return {flops, bytes};
}

Cost attention_backward(const ModelConfig& m, double pairs, double q_tokens, double k_tokens,
                        double elem_bytes) {
  if (pairs <= 0) return {};
  const double flops = 2.5 * 4.0 * pairs * m.head_dim() * m.heads;
  // read Q, O, dO, K, V; write dQ, dK, dV.
  const double bytes = (4.0 * q_tokens * m.d_model + 4.0 * k_tokens * m.d_kv()) * elem_bytes;
  return {flops, bytes};
}

Cost mos_project(const ModelConfig& m, int k_rank, int v_rank, double tokens,
                 double elem_bytes) {
  const double hd = m.head_dim(), kvh = m.kv_heads;
  const double ranks = k_rank + v_rank;
  // C = Z·U(θ) per kv head; U(θ) = U0 + θ·AU0 + ½θ²·A²U0 (4·hd·r); θ = ψ(mean of the chunk).
  const double flops = kvh * (2.0 * tokens * hd * ranks + 4.0 * hd * ranks) +
                       2.0 * tokens * m.d_kv();
  const double bytes = (2.0 * tokens * m.d_kv() + tokens * ranks * kvh) * elem_bytes;
  return {flops, bytes};
}

Cost mos_reconstruct(const ModelConfig& m, int k_rank, int v_rank, double tokens,
                     double elem_bytes) {
  const double hd = m.head_dim(), kvh = m.kv_heads;
  const double ranks = k_rank + v_rank;
  const double flops = kvh * (2.0 * tokens * hd * ranks + 4.0 * hd * ranks);
  const double bytes = (2.0 * tokens * m.d_kv() + tokens * ranks * kvh) * elem_bytes;
  return {flops, bytes};
}

Cost adamw_step(double params) {
  // fp32 master weights and moments: read p, g, m, v, write p, m, v (7 x 4 bytes);
  // about 12 FLOPs per parameter (moments, bias correction, decay, update).
  return {12.0 * params, 28.0 * params};
}

double layer_parameters(const ModelConfig& m) {
  const double d = m.d_model;
  return 2.0 * d + d * (d + 2.0 * m.d_kv()) + d * d + 3.0 * d * m.ffn_hidden;
}

double embedding_parameters(const ModelConfig& m) {
  return static_cast<double>(m.vocab) * m.d_model;
}

double head_parameters(const ModelConfig& m) {
  return m.d_model + (m.tie_embeddings ? 0.0 : static_cast<double>(m.vocab) * m.d_model);
}

double seconds(const sim::DeviceProfile& device, double flops, double bytes, sim::DType dtype) {
  return device.seconds(flops, bytes, dtype);
}

double node_seconds(const Scenario& s, int node, const Cost& c, const char* tag) {
  const sim::DeviceProfile& device = s.devices.for_node(node);
  const double sec = seconds(device, c, s.devices.dtype);
  if (!std::isfinite(sec) || sec < 0)
    throw InputError("devices", "profile '" + device.name + "' of node " + std::to_string(node) +
                                    " gives no finite time for '" + tag +
                                    "' (zero peak FLOP/s, memory bandwidth or efficiency?)");
  return sec;
}

}  // namespace cost
}  // namespace lowband
