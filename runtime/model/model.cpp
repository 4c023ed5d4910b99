// Model: buffers, batch set-up, embedding and LM head (forward and backward), and
// the whole-step drivers. The per-layer passes are in model_layer.cpp.
#include "runtime/model/model.h"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <string>

#include "common/error.h"

namespace lowband::model {

using kernels::Trans;

Model::Model(const ModelConfig& config, uint64_t seed, ModelOptions options)
    : layout_(config, options.span), options_(options), k_(&kernels::backend(options.device)),
      params_(*k_, size_t(layout_.count())), grads_(*k_, size_t(layout_.count())) {
  if (k_->device != kernels::Device::dry) {  // a dry model (shapes only) has no values to draw
    std::vector<float> initial(size_t(layout_.count()));
    init_parameters(layout_, seed, initial.data());
    params_.upload(initial.data(), initial.size());
  }
  if (options.fixed_embedding != nullptr && layout_.span().embedding && k_->device != kernels::Device::dry)
    fixed_embedding_ = kernels::BackendBuffer<float>(*k_, std::vector<float>(options.fixed_embedding,
                                                                              options.fixed_embedding +
                                                                                  int64_t(config.vocab) * config.d_model));
  options_.fixed_embedding = nullptr;  // copied (or not needed): never read through again
  slots_.resize(1);
}

void Model::use_slot(int slot) {
  if (slot < 0) throw std::invalid_argument("Model::use_slot: negative slot");
  if (slot == slot_) return;
  if (size_t(slot) >= slots_.size()) slots_.resize(size_t(slot) + 1);
  std::swap(ws_, slots_[size_t(slot_)]);  // park the current one
  std::swap(ws_, slots_[size_t(slot)]);
  slot_ = slot;
}

void Model::size_workspace(int64_t n) {
  if (n == ws_.rows && !ws_.workspace.empty()) return;
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
    ws_.acts.resize(size_t(layout_.end_layer() - layout_.first_layer()));
    for (auto& a : ws_.acts) {
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
    ws_.x_final = take(n * d);
    ws_.xf = take(n * d);
    ws_.rstdf = take(n);
    ws_.logits = take(n * V);
    ws_.losses = take(n);
    ws_.lse = take(n);
    ws_.dres = take(n * d);
    ws_.dxn = take(n * d);
    ws_.datt = take(n * d);
    ws_.dq = take(n * d);
    ws_.dk = take(n * dkv);
    ws_.dv = take(n * dkv);
    ws_.dh = take(n * f);
  };
  lay_out();
  ws_.workspace = kernels::BackendBuffer<float>(*k_, size_t(used));
  base = ws_.workspace.data();
  lay_out();
  ws_.inputs = kernels::BackendBuffer<int32_t>(*k_, size_t(n));
  ws_.targets = kernels::BackendBuffer<int32_t>(*k_, size_t(n));
  ws_.positions_dev = kernels::BackendBuffer<int64_t>(*k_, size_t(n));
  ws_.rows = n;
}

void Model::begin(const TokenBatch& b) {
  if (b.inputs == nullptr) throw InputError("batch.inputs", "missing");
  if (b.sequences <= 0 || b.tokens <= 0)
    throw InputError("batch", "needs sequences > 0 and tokens > 0, got " +
                                  std::to_string(b.sequences) + " x " + std::to_string(b.tokens));
  const int64_t n = b.sequences * b.tokens;
  ws_.sequences = b.sequences;
  ws_.tokens = b.tokens;
  ws_.positions.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    ws_.positions[size_t(i)] = b.positions != nullptr ? b.positions[i] : i % b.tokens;
    if (ws_.positions[size_t(i)] < 0)
      throw InputError("batch.positions[" + std::to_string(i) + "]", "must not be negative");
  }
  // Checked here, not only in the kernels: a CUDA kernel cannot throw, and would
  // read outside the embedding table instead.
  const int64_t vocab = config().vocab;
  for (int64_t i = 0; k_->device != kernels::Device::dry && i < n; ++i) {  // a dry run's tokens are its own
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
  ws_.inputs.upload(b.inputs, size_t(n));
  ws_.has_targets = b.targets != nullptr;
  if (ws_.has_targets) ws_.targets.upload(b.targets, size_t(n));
  ws_.positions_dev.upload(ws_.positions.data(), size_t(n));
  if (!layout_.span().embedding) return;  // the stage's input residual comes from input_residual()
  const ModelConfig& c = config();
  float* x = ws_.acts.empty() ? ws_.x_final : ws_.acts[0].x;
  k_->embedding_forward(ws_.inputs.data(), n, w(layout_.embedding()), c.vocab, c.d_model, x);
  if (!fixed_embedding_.empty()) {  // x = E_learn[t] + E_fixed[t]; dres is free until the backward
    k_->embedding_forward(ws_.inputs.data(), n, fixed_embedding_.data(), c.vocab, c.d_model, ws_.dres);
    k_->add_inplace(x, ws_.dres, n * c.d_model);
  }
}

float* Model::input_residual() {
  if (ws_.rows == 0) throw InputError("layer", "input_residual() called before begin()");
  return ws_.acts.empty() ? ws_.x_final : ws_.acts[0].x;
}

AttentionBatch Model::attention_batch() const {
  const ModelConfig& c = config();
  AttentionBatch a;
  a.sequences = ws_.sequences;
  a.tokens = ws_.tokens;
  a.heads = c.heads;
  a.kv_heads = c.kv_heads;
  a.head_dim = c.head_dim();
  a.positions = ws_.positions.data();
  return a;
}

float Model::head_forward() {
  if (!layout_.span().head) throw std::logic_error("head_forward on a pipeline stage without the LM head");
  if (!ws_.has_targets) throw InputError("batch.targets", "missing: the loss needs targets");
  const ModelConfig& c = config();
  const int64_t n = ws_.rows, d = c.d_model, V = c.vocab;
  k_->rmsnorm_forward(ws_.x_final, w(layout_.final_norm()), n, d, options_.norm_eps, ws_.xf, ws_.rstdf);
  // logits (n, V) = xf (n, d) · lm_headᵀ (d, V)
  k_->matmul(Trans::no, Trans::yes, n, V, d, 1.0f, ws_.xf, d, w(layout_.lm_head()), d, 0.0f, ws_.logits, V);
  return k_->cross_entropy_forward(ws_.logits, ws_.targets.data(), n, V, ws_.losses, ws_.lse);
}

int64_t Model::correct_predictions() const {
  const int64_t n = ws_.rows, V = config().vocab;
  if (!ws_.has_targets || n == 0) return 0;
  std::vector<float> logits_host;
  const float* logits = kernels::host_view(*k_, ws_.logits, size_t(n * V), logits_host);
  const std::vector<int32_t> targets = ws_.targets.to_host();
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (targets[size_t(i)] < 0) continue;
    const float* row = logits + i * V;
    correct += std::max_element(row, row + V) - row == targets[size_t(i)];
  }
  return correct;
}

void Model::zero_grads() { k_->zero(grads_.data(), grads_.size() * sizeof(float)); }

void Model::head_backward(float dloss) {
  if (!layout_.span().head) throw std::logic_error("head_backward on a pipeline stage without the LM head");
  const ModelConfig& c = config();
  const int64_t n = ws_.rows, d = c.d_model, V = c.vocab;
  float* dlogits = ws_.logits;  // in place: the logits are not needed again
  k_->cross_entropy_backward(ws_.logits, ws_.targets.data(), ws_.lse, n, V, dlogits, dloss);
  // d lm_head (V, d) += dlogitsᵀ (V, n) · xf (n, d)
  k_->matmul(Trans::yes, Trans::no, V, d, n, 1.0f, dlogits, V, ws_.xf, d, 1.0f, g(layout_.lm_head()), d);
  // d xf (n, d) = dlogits (n, V) · lm_head (V, d)
  k_->matmul(Trans::no, Trans::no, n, d, V, 1.0f, dlogits, V, w(layout_.lm_head()), d, 0.0f, ws_.dxn, d);
  k_->rmsnorm_backward(ws_.dxn, ws_.x_final, w(layout_.final_norm()), ws_.rstdf, n, d, ws_.dres,
                      g(layout_.final_norm()));
}

void Model::embedding_backward() {
  if (!layout_.span().embedding) return;  // dL/d(input residual) stays in residual_grad()
  const ModelConfig& c = config();
  k_->embedding_backward(ws_.inputs.data(), ws_.rows, ws_.dres, c.vocab, c.d_model, g(layout_.embedding()));
}

void Model::forward_layers(AttentionProvider& attention) {
  const AttentionBatch ab = attention_batch();
  for (int l = layout_.first_layer(); l < layout_.end_layer(); ++l) {
    layer_forward_qkv(l);
    LayerActivations& a = act(l);
    attention.forward(l, ab, a.q, a.k, a.v, a.att);
    layer_forward_post_attention(l);
  }
}

void Model::backward_layers(AttentionProvider& attention) {
  const AttentionBatch ab = attention_batch();
  for (int l = layout_.end_layer() - 1; l >= layout_.first_layer(); --l) {
    layer_backward_post_attention(l);
    LayerActivations& a = act(l);
    attention.backward(l, ab, a.q, a.k, a.v, a.att, ws_.datt, ws_.dq, ws_.dk, ws_.dv);
    layer_backward_qkv(l);
  }
}

float Model::forward(const TokenBatch& batch, AttentionProvider& attention) {
  begin(batch);
  forward_layers(attention);
  return head_forward();
}

float Model::forward_backward(const TokenBatch& batch, AttentionProvider& attention, float dloss) {
  const float loss = forward(batch, attention);
  zero_grads();
  head_backward(dloss);
  backward_layers(attention);
  embedding_backward();
  return loss;
}

}  // namespace lowband::model
