#pragma once
// Blockwise (flash-attention style) scaled dot-product attention with an online
// softmax, for one query block against one key/value block. A context-parallel
// rank calls it once per (local query block, local or remote K/V block), merges
// the partial results by log-sum-exp, and runs the backward per block pair
// against the FINAL merged out and lse.
//
// Layouts (row-major, the rows of a QKV projection output):
//   q, out, dq, dout   (nq, heads, head_dim)
//   k, v, dk, dv       (nk, kv_heads, head_dim)
//   lse, delta         (heads, nq)
// Grouped-query attention: query head h reads kv head h / (heads / kv_heads).
// Query i sits at global position q_offset + i, key j at k_offset + j; with
// causal set, query i attends key j iff k_offset + j <= q_offset + i.
// lse is the natural log of sum_j exp(scale * q_i . k_j) over the attended keys;
// a row that attends no key gets lse = -inf and out = 0.
//
// cpu:: tiles queries and keys and never materialises an nq x nk matrix (only
// per-thread tiles); the tile products run in oneDNN's sgemm. cuda:: takes device
// pointers. Both throw lowband::InputError on inconsistent shapes.
#include <cstdint>

namespace lowband::kernels {

struct AttentionShape {
  int64_t nq = 0;        // queries in this block
  int64_t nk = 0;        // keys/values in this block
  int64_t heads = 1;     // query heads
  int64_t kv_heads = 1;  // key/value heads; divides heads
  int64_t head_dim = 0;
  int64_t q_offset = 0;  // global position of query 0
  int64_t k_offset = 0;  // global position of key 0
  bool causal = true;
  float scale = 0.0f;  // softmax scale, usually 1/sqrt(head_dim)
};

// Throws InputError("<where>.<field>", ...) when a size is negative, head_dim or
// heads is not positive, kv_heads does not divide heads, or scale is not finite.
void check_attention_shape(const AttentionShape& s, const char* where);

// Forward/backward FLOPs that the benchmarks count: only unmasked (query, key)
// pairs, 4 * pairs * head_dim per head forward (QK^T and PV), backward 2.5x that
// (five products: QK^T recomputed, dO V^T, P^T dO, dS^T Q, dS K).
int64_t attention_unmasked_pairs(const AttentionShape& s);
double attention_forward_flops(const AttentionShape& s);
double attention_backward_flops(const AttentionShape& s);

namespace cpu {
// out (nq, heads, head_dim), lse (heads, nq): both overwritten.
void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       float* out, float* lse);

// Combines partial results over disjoint key sets, in place into (out_a, lse_a):
//   lse = log(exp(lse_a) + exp(lse_b)), out = exp(lse_a - lse)*out_a + exp(lse_b - lse)*out_b.
// A side with lse = -inf contributes nothing (its out is ignored, even if NaN).
// out_a, out_b (nq, heads, head_dim); lse_a, lse_b (heads, nq).
void attention_merge(int64_t nq, int64_t heads, int64_t head_dim, float* out_a, float* lse_a,
                     const float* out_b, const float* lse_b);

// delta (heads, nq) = rowsum(dout * out) over head_dim, from the FINAL (merged)
// out. Compute it once per query block and pass it to every attention_backward
// call of that block.
void attention_backward_delta(int64_t nq, int64_t heads, int64_t head_dim, const float* out,
                              const float* dout, float* delta);

// Gradient contribution of one (query block, kv block) pair, ACCUMULATED into
// dq (nq, heads, head_dim), dk and dv (nk, kv_heads, head_dim) (zero them before
// the first block). lse is the final merged lse (heads, nq), delta from
// attention_backward_delta. Summed over all kv blocks (for dq) and all query
// blocks (for dk, dv) this equals the whole-sequence gradient.
void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v,
                        const float* lse, const float* delta, const float* dout, float* dq,
                        float* dk, float* dv);
}  // namespace cpu

namespace cuda {
void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       float* out, float* lse);
void attention_merge(int64_t nq, int64_t heads, int64_t head_dim, float* out_a, float* lse_a,
                     const float* out_b, const float* lse_b);
void attention_backward_delta(int64_t nq, int64_t heads, int64_t head_dim, const float* out,
                              const float* dout, float* delta);
void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v,
                        const float* lse, const float* delta, const float* dout, float* dq,
                        float* dk, float* dv);
}  // namespace cuda

}  // namespace lowband::kernels
