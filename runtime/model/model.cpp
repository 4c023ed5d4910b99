// Model: buffers, batch set-up, embedding and LM head (forward and backward), and
// the whole-step drivers. The per-layer passes are in model_layer.cpp.
#include "runtime/model/model.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace lowband::model {

using kernels::Trans;

Model::Model(const ModelConfig& config, uint64_t seed, ModelOptions options)
    : layout_(config), options_(options), k_(&kernels::backend(options.device)),
      params_(*k_, size_t(layout_.count())), grads_(*k_, size_t(layout_.count())) {
  std::vector<float> initial(size_t(layout_.count()));
  init_parameters(layout_, seed, initial.data());
  params_.upload(initial.data(), initial.size());
}

void Model::size_workspace(int64_t n) {
  if (n == rows_ && !workspace_.empty()) return;
  const ModelConfig& c = config();
  const int64_t d = c.d_model, dkv = c.d_kv(), f = c.ffn_hidden, V = c.vocab;
  // Every view starts on a cache line (16 floats), so the kernels' vector loads
  // of a row never straddle two lines. Laid out twice: first to count, then to point.
  constexpr int64_t kLineFloats = int64_t(kCacheLineBytes / sizeof(float));
  float* base = nullptr;
  int64_t used = 0;
  auto take = [&](int64_t count) {
    float* r = base == nullptr ? nullptr : base + used;
    used += (count + kLineFloats - 1) / kLineFloats * kLineFloats;
    return r;
  };
  auto lay_out = [&] {
    used = 0;
    acts_.resize(size_t(c.layers));
    for (auto& a : acts_) {
      a.x = take(n * d);
      a.xn1 = take(n * d);
      a.rstd1 = take(n);
      a.q = take(n * d);
      a.k = take(n * dkv);
      a.v = take(n * dkv);
      a.att = take(n * d);
      a.x1 = take(n * d);
      a.xn2 = take(n * d);
      a.rstd2 = take(n);
      a.gate = take(n * f);
      a.up = take(n * f);
      a.h = take(n * f);
    }
    x_final_ = take(n * d);
    xf_ = take(n * d);
    rstdf_ = take(n);
    logits_ = take(n * V);
    losses_ = take(n);
    lse_ = take(n);
    dres_ = take(n * d);
    dxn_ = take(n * d);
    datt_ = take(n * d);
    dq_ = take(n * d);
    dk_ = take(n * dkv);
    dv_ = take(n * dkv);
    dh_ = take(n * f);
  };
  lay_out();
  workspace_ = kernels::BackendBuffer<float>(*k_, size_t(used));
  base = workspace_.data();
  lay_out();
  inputs_ = kernels::BackendBuffer<int32_t>(*k_, size_t(n));
  targets_ = kernels::BackendBuffer<int32_t>(*k_, size_t(n));
  positions_dev_ = kernels::BackendBuffer<int64_t>(*k_, size_t(n));
  rows_ = n;
}

void Model::begin(const TokenBatch& b) {
  if (b.inputs == nullptr) throw InputError("batch.inputs", "missing");
  if (b.sequences <= 0 || b.tokens <= 0)
    throw InputError("batch", "needs sequences > 0 and tokens > 0, got " +
                                  std::to_string(b.sequences) + " x " + std::to_string(b.tokens));
  const int64_t n = b.sequences * b.tokens;
  sequences_ = b.sequences;
  tokens_ = b.tokens;
  positions_.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    positions_[size_t(i)] = b.positions != nullptr ? b.positions[i] : i % b.tokens;
    if (positions_[size_t(i)] < 0)
      throw InputError("batch.positions[" + std::to_string(i) + "]", "must not be negative");
  }
  // Checked here, not only in the kernels: a CUDA kernel cannot throw, and would
  // read outside the embedding table instead.
  const int64_t vocab = config().vocab;
  for (int64_t i = 0; i < n; ++i) {
    if (b.inputs[i] < 0 || b.inputs[i] >= vocab)
      throw InputError("batch.inputs[" + std::to_string(i) + "]",
                       "token id " + std::to_string(b.inputs[i]) + " is outside [0, " +
                           std::to_string(vocab) + ")");
    if (b.targets != nullptr && b.targets[i] >= vocab)
      throw InputError("batch.targets[" + std::to_string(i) + "]",
                       "target " + std::to_string(b.targets[i]) + " is >= vocabulary size " +
                           std::to_string(vocab));
  }
  size_workspace(n);
  inputs_.upload(b.inputs, size_t(n));
  has_targets_ = b.targets != nullptr;
  if (has_targets_) targets_.upload(b.targets, size_t(n));
  positions_dev_.upload(positions_.data(), size_t(n));
  const ModelConfig& c = config();
  k_->embedding_forward(inputs_.data(), n, w(layout_.embedding()), c.vocab, c.d_model, acts_[0].x);
}

AttentionBatch Model::attention_batch() const {
  const ModelConfig& c = config();
  AttentionBatch a;
  a.sequences = sequences_;
  a.tokens = tokens_;
  a.heads = c.heads;
  a.kv_heads = c.kv_heads;
  a.head_dim = c.head_dim();
  a.positions = positions_.data();
  return a;
}

float Model::head_forward() {
  if (!has_targets_) throw InputError("batch.targets", "missing: the loss needs targets");
  const ModelConfig& c = config();
  const int64_t n = rows_, d = c.d_model, V = c.vocab;
  k_->rmsnorm_forward(x_final_, w(layout_.final_norm()), n, d, options_.norm_eps, xf_, rstdf_);
  // logits (n, V) = xf (n, d) · lm_headᵀ (d, V)
  k_->matmul(Trans::no, Trans::yes, n, V, d, 1.0f, xf_, d, w(layout_.lm_head()), d, 0.0f, logits_, V);
  return k_->cross_entropy_forward(logits_, targets_.data(), n, V, losses_, lse_);
}

void Model::zero_grads() { k_->zero(grads_.data(), grads_.size() * sizeof(float)); }

void Model::head_backward(float dloss) {
  const ModelConfig& c = config();
  const int64_t n = rows_, d = c.d_model, V = c.vocab;
  float* dlogits = logits_;  // in place: the logits are not needed again
  k_->cross_entropy_backward(logits_, targets_.data(), lse_, n, V, dlogits, dloss);
  // d lm_head (V, d) += dlogitsᵀ (V, n) · xf (n, d)
  k_->matmul(Trans::yes, Trans::no, V, d, n, 1.0f, dlogits, V, xf_, d, 1.0f, g(layout_.lm_head()), d);
  // d xf (n, d) = dlogits (n, V) · lm_head (V, d)
  k_->matmul(Trans::no, Trans::no, n, d, V, 1.0f, dlogits, V, w(layout_.lm_head()), d, 0.0f, dxn_, d);
  k_->rmsnorm_backward(dxn_, x_final_, w(layout_.final_norm()), rstdf_, n, d, dres_,
                      g(layout_.final_norm()));
}

void Model::embedding_backward() {
  const ModelConfig& c = config();
  k_->embedding_backward(inputs_.data(), rows_, dres_, c.vocab, c.d_model, g(layout_.embedding()));
}

float Model::forward(const TokenBatch& batch, AttentionProvider& attention) {
  begin(batch);
  const AttentionBatch ab = attention_batch();
  for (int l = 0; l < config().layers; ++l) {
    layer_forward_qkv(l);
    LayerActivations& a = acts_[size_t(l)];
    attention.forward(l, ab, a.q, a.k, a.v, a.att);
    layer_forward_post_attention(l);
  }
  return head_forward();
}

float Model::forward_backward(const TokenBatch& batch, AttentionProvider& attention, float dloss) {
  const float loss = forward(batch, attention);
  zero_grads();
  head_backward(dloss);
  const AttentionBatch ab = attention_batch();
  for (int l = config().layers - 1; l >= 0; --l) {
    layer_backward_post_attention(l);
    LayerActivations& a = acts_[size_t(l)];
    attention.backward(l, ab, a.q, a.k, a.v, a.att, datt_, dq_, dk_, dv_);
    layer_backward_qkv(l);
  }
  embedding_backward();
  return loss;
}

}  // namespace lowband::model
