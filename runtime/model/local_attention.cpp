#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "kernels/attention.h"
#include "runtime/model/attention_provider.h"

namespace lowband::model {
namespace {

kernels::AttentionShape sequence_shape(const AttentionBatch& b, int64_t seq) {
  kernels::AttentionShape s;
  s.nq = s.nk = b.tokens;
  s.heads = b.heads;
  s.kv_heads = b.kv_heads;
  s.head_dim = b.head_dim;
  s.q_offset = s.k_offset = b.positions[seq * b.tokens];
  s.causal = true;
  s.scale = float(1.0 / std::sqrt(double(b.head_dim)));
  return s;
}

void check_consecutive(const AttentionBatch& b) {
  if (b.positions == nullptr) throw InputError("positions", "LocalAttention needs positions");
  for (int64_t s = 0; s < b.sequences; ++s) {
    const int64_t* p = b.positions + s * b.tokens;
    for (int64_t i = 1; i < b.tokens; ++i)
      if (p[i] != p[0] + i)
        throw InputError("positions[" + std::to_string(s * b.tokens + i) + "]",
                         "LocalAttention needs consecutive positions per sequence");
  }
}

}  // namespace

float* LocalAttention::lse_for(int layer, const AttentionBatch& b) {
  if (layer < 0) throw InputError("layer", "negative layer index");
  if (static_cast<size_t>(layer) >= lse_.size()) lse_.resize(size_t(layer) + 1);
  auto& lse = lse_[size_t(layer)];
  const size_t count = size_t(b.sequences * b.heads * b.tokens);
  if (lse.size() != count) lse = kernels::BackendBuffer<float>(*k_, count);
  return lse.data();
}

void LocalAttention::forward(int layer, const AttentionBatch& b, const float* q, const float* k,
                             const float* v, float* out) {
  if (k_->device != kernels::Device::dry) check_consecutive(b);  // a dry run's positions are its own
  float* lse = lse_for(layer, b);
  const int64_t q_row = b.heads * b.head_dim, kv_row = b.kv_heads * b.head_dim;
  for (int64_t s = 0; s < b.sequences; ++s) {
    const int64_t r0 = s * b.tokens;
    k_->attention_forward(sequence_shape(b, s), q + r0 * q_row, k + r0 * kv_row, v + r0 * kv_row,
                          out + r0 * q_row, lse + s * b.heads * b.tokens);
  }
}

void LocalAttention::backward(int layer, const AttentionBatch& b, const float* q, const float* k,
                              const float* v, const float* out, const float* dout, float* dq,
                              float* dk, float* dv) {
  if (static_cast<size_t>(layer) >= lse_.size() || lse_[size_t(layer)].empty())
    throw InputError("layer",
                     "LocalAttention::backward(" + std::to_string(layer) + ") before its forward");
  const float* lse = lse_[size_t(layer)].data();
  const int64_t q_row = b.heads * b.head_dim, kv_row = b.kv_heads * b.head_dim;
  k_->zero(dq, size_t(b.rows() * q_row) * sizeof(float));
  k_->zero(dk, size_t(b.rows() * kv_row) * sizeof(float));
  k_->zero(dv, size_t(b.rows() * kv_row) * sizeof(float));
  if (delta_.size() != size_t(b.heads * b.tokens))
    delta_ = kernels::BackendBuffer<float>(*k_, size_t(b.heads * b.tokens));
  for (int64_t s = 0; s < b.sequences; ++s) {
    const int64_t r0 = s * b.tokens;
    const float* seq_lse = lse + s * b.heads * b.tokens;
    k_->attention_backward_delta(b.tokens, b.heads, b.head_dim, out + r0 * q_row, dout + r0 * q_row,
                                 delta_.data());
    k_->attention_backward(sequence_shape(b, s), q + r0 * q_row, k + r0 * kv_row, v + r0 * kv_row,
                           seq_lse, delta_.data(), dout + r0 * q_row, dq + r0 * q_row,
                           dk + r0 * kv_row, dv + r0 * kv_row);
  }
}

}  // namespace lowband::model
