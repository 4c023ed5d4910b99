#pragma once
// FLOPs and memory traffic of each piece of one Llama-style layer, from the
// model's shapes alone. `estimate` turns them into seconds with a device's
// roofline (sim::DeviceProfile::seconds).
//
// Conventions:
//  - a matmul of (n x a) by (a x b) costs 2·n·a·b FLOPs; its backward costs
//    twice that (dX and dW), so every dense piece has backward = 2 x forward;
//  - attention counts only the (query, key) pairs the causal mask keeps:
//    forward 4·pairs·head_dim·heads (QKᵀ and PV), backward 2.5 x forward
//    (flash-attention style: 2x for the gradients plus a recompute of the scores);
//  - memory bytes are what a kernel must read and write at least once, in the
//    compute precision's element size (elem_bytes).
#include <cstdint>

#include "runtime/scenario/scenario.h"
#include "sim/device_profile.h"

namespace lowband::cost {

struct Cost {
  double flops = 0;
  double bytes = 0;  // memory traffic
  Cost& operator+=(const Cost& o) {
    flops += o.flops;
    bytes += o.bytes;
    return *this;
  }
  Cost operator*(double k) const { return {flops * k, bytes * k}; }
};
inline Cost operator+(Cost a, const Cost& b) { return a += b; }

// Size of one element in the compute precision (bf16/fp16: 2, fp32/tf32: 4).
double dtype_bytes(sim::DType dtype);

// A plain matmul (n x a) · (a x b): 2·n·a·b FLOPs; reads both, writes the result.
Cost matmul(double n, double a, double b, double elem_bytes);

// Number of (query, key) position pairs with key <= query, for queries in
// [q_begin, q_end) and keys in [k_begin, k_end) (global token offsets). Exact.
double causal_pairs(int64_t q_begin, int64_t q_end, int64_t k_begin, int64_t k_end);

// Forward costs for `tokens` tokens (batch already folded into tokens).
Cost rmsnorm_forward(const ModelConfig& m, double tokens, double elem_bytes);
Cost qkv_forward(const ModelConfig& m, double tokens, double elem_bytes);  // d -> d + 2·d_kv
Cost out_proj_forward(const ModelConfig& m, double tokens, double elem_bytes);
Cost mlp_forward(const ModelConfig& m, double tokens, double elem_bytes);  // SwiGLU, 3 matrices
Cost embedding_forward(const ModelConfig& m, double tokens, double elem_bytes);  // a gather
Cost lm_head_forward(const ModelConfig& m, double tokens, double elem_bytes);    // 2·n·d·vocab + softmax
// The dense pieces around a layer's attention, and the model's end: what every
// parallel schedule (context, pipeline) runs per layer.
Cost pre_attention_forward(const ModelConfig& m, double tokens, double elem_bytes);   // norm + QKV
Cost post_attention_forward(const ModelConfig& m, double tokens, double elem_bytes);  // out proj + norm + MLP
Cost head_forward(const ModelConfig& m, double tokens, double elem_bytes);            // final norm + LM head

// Attention of `q_tokens` queries against `k_tokens` keys of which `pairs`
// survive the causal mask. Memory: read Q, K, V, write O (and the merge of
// partial results by log-sum-exp, one read and write of O).
Cost attention_forward(const ModelConfig& m, double pairs, double q_tokens, double k_tokens,
                       double elem_bytes);
Cost attention_backward(const ModelConfig& m, double pairs, double q_tokens, double k_tokens,
                        double elem_bytes);
// Backward of a dense piece: 2 x forward FLOPs and bytes.
inline Cost dense_backward(const Cost& forward) { return forward * 2.0; }

// Mixtures of subspaces: projecting `tokens` tokens' K and V onto rank k_rank /
// v_rank subspaces per kv head (C = Z·U(θ), plus building U(θ) and θ = ψ(mean)),
// and reconstructing Ẑ = C·U(θ)ᵀ on the receiver. The backward of each costs the same.
Cost mos_project(const ModelConfig& m, int k_rank, int v_rank, double tokens, double elem_bytes);
Cost mos_reconstruct(const ModelConfig& m, int k_rank, int v_rank, double tokens,
                     double elem_bytes);

// AdamW over `params` parameters: reads param, grad, m, v and writes param, m, v (fp32).
Cost adamw_step(double params);

// Parameter counts (ModelConfig::parameters() is their sum).
double layer_parameters(const ModelConfig& m);          // 2 norms, QKV, out proj, MLP
double embedding_parameters(const ModelConfig& m);      // vocab·d
double head_parameters(const ModelConfig& m);           // final norm + LM head (0 if tied)

// Seconds on a device: its roofline with efficiency.
double seconds(const sim::DeviceProfile& device, double flops, double bytes, sim::DType dtype);
inline double seconds(const sim::DeviceProfile& device, const Cost& c, sim::DType dtype) {
  return seconds(device, c.flops, c.bytes, dtype);
}
// Seconds of `c` on network node `node`'s device profile in `scenario`;
// InputError("devices") when the profile gives no finite time (`tag` names the task).
double node_seconds(const Scenario& scenario, int node, const Cost& c, const char* tag);

}  // namespace lowband::cost
