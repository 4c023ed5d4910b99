#pragma once
// A Llama-style decoder trained by hand (llm.c style) on one device's kernels
// (ModelOptions::device: the CPU, or a CUDA GPU through kernels/backend.h):
//   x = embedding[tokens]
//   per layer: x += wo · attention(rope(wq·n1), rope(wk·n1), wv·n1),  n1 = rmsnorm(x, attn_norm)
//              x += w_down · (silu(w_gate·n2) * (w_up·n2)),           n2 = rmsnorm(x, mlp_norm)
//   loss = mean cross-entropy(lm_head · rmsnorm(x, final_norm), targets)
// Grouped-query attention when kv_heads < heads. Parameters and gradients are
// each one flat float buffer (layout: param_layout.h); those buffers and every
// activation in the workspace start on a 64-byte boundary (common/aligned_buffer.h).
// On a CUDA model every buffer pointer below (params, grads, activations,
// logits, losses, dq/dk/dv) is device memory; params_to_host()/grads_to_host()
// copy them out. positions() and attention_batch().positions stay on the host.
//
// Activations are rows = local tokens (sequence-major, sequences * tokens rows)
// by features, row-major; Q/K/V in the attention kernels' (rows, heads, head_dim)
// layout. The workspace holding them is sized by the first batch and reused
// while the batch shape stays the same.
//
// Two ways to run it:
//  - forward / forward_backward with an AttentionProvider (LocalAttention for
//    one device);
//  - the phases below, for a trainer that drives several ranks' models layer by
//    layer and computes attention itself (read q/k/v from activations(l), write
//    activations(l).att; in the backward read attention_grad_out(), write dq/dk/dv):
//      begin(batch); for l: layer_forward_qkv(l); <attention>; layer_forward_post_attention(l);
//      loss = head_forward();
//      zero_grads(); head_backward(dloss);
//      for l = L-1..0: layer_backward_post_attention(l); <attention backward>; layer_backward_qkv(l);
//      embedding_backward();
//
// A pipeline stage's model (ModelOptions::span) holds only its layers (global
// indices), the embedding on the first stage and the head on the last. A stage
// without the embedding gets its input from the previous stage: begin(batch),
// then write input_residual() (rows, d); one without the head hands on
// output_residual() after its last layer, and in the backward starts from the
// next stage's gradient written into residual_grad() (after zero_grads(), if
// it is the first microbatch); after its first layer's backward residual_grad()
// holds dL/d(input residual) to send back.
//
// Microbatches in flight (a pipeline holds several): use_slot(i) switches every
// per-batch buffer (activations, batch, scratch) to slot i's own; parameters and
// gradients are shared, so gradients accumulate over the slots' backwards.
//
// Protocol Models embedding (ModelOptions::fixed_embedding): x = E[t] + E_fixed[t]
// with E_fixed a frozen (vocab, d) table (compress/subspace_constraint.h).
#include <cstdint>
#include <string>
#include <vector>

#include "common/aligned_buffer.h"
#include "kernels/backend.h"
#include "kernels/backend_buffer.h"
#include "runtime/model/attention_provider.h"
#include "runtime/model/param_layout.h"
#include "runtime/scenario/scenario.h"

namespace lowband::model {

struct ModelOptions {
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  kernels::Device device = kernels::Device::cpu;
  StageSpan span{};                         // the whole model by default
  const float* fixed_embedding = nullptr;   // host (vocab, d), copied; null: none
};

struct TokenBatch {
  const int32_t* inputs = nullptr;     // (sequences * tokens), each in [0, vocab)
  const int32_t* targets = nullptr;    // (sequences * tokens), < 0 ignores the row; may be
                                       // nullptr for begin() without a loss
  const int64_t* positions = nullptr;  // (sequences * tokens) global positions;
                                       // nullptr: 0 .. tokens-1 in every sequence
  int64_t sequences = 1;
  int64_t tokens = 0;                  // local tokens per sequence
};

// One layer's saved activations: views into the model's workspace (n = rows).
struct LayerActivations {
  float* x;      // (n, d)        the layer's input (residual stream)
  float* xn1;    // (n, d)        attn_norm(x)
  float* rstd1;  // (n)
  float* q;      // (n, heads, head_dim)     after RoPE
  float* k;      // (n, kv_heads, head_dim)  after RoPE
  float* v;      // (n, kv_heads, head_dim)
  float* att;    // (n, heads, head_dim)     attention output
  float* x1;     // (n, d)        x + att · woᵀ
  float* xn2;    // (n, d)        mlp_norm(x1)
  float* rstd2;  // (n)
  float* gate;   // (n, f)        xn2 · w_gateᵀ (overwritten by its gradient in the backward)
  float* up;     // (n, f)        xn2 · w_upᵀ   (likewise)
  float* h;      // (n, f)        silu(gate) * up
};

class Model {
 public:
  // Parameters initialised by init_parameters(seed); gradients zero.
  Model(const ModelConfig& config, uint64_t seed, ModelOptions options = {});
  // The activation views point into this model's workspace: a copy would share
  // them, so copying is disabled (moving keeps the buffers and stays valid).
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  Model(Model&&) noexcept = default;
  Model& operator=(Model&&) noexcept = default;

  const ModelConfig& config() const { return layout_.config(); }
  const ModelOptions& options() const { return options_; }
  const ParamLayout& layout() const { return layout_; }
  int64_t param_count() const { return layout_.count(); }
  float* params() { return params_.data(); }
  const float* params() const { return params_.data(); }
  float* grads() { return grads_.data(); }
  const float* grads() const { return grads_.data(); }
  float* param(const std::string& name) { return params_.data() + layout_.find(name).offset; }
  float* grad(const std::string& name) { return grads_.data() + layout_.find(name).offset; }
  const kernels::Backend& backend() const { return *k_; }
  std::vector<float> params_to_host() const { return params_.to_host(); }
  std::vector<float> grads_to_host() const { return grads_.to_host(); }

  // Mean loss over the valid targets; logits() then holds (rows, vocab).
  float forward(const TokenBatch& batch, AttentionProvider& attention);
  // Zeroes the gradients, then fills them with d(dloss · mean loss)/dparams.
  // Returns the mean loss. Under context parallelism pass dloss =
  // valid_local / valid_global so the ranks' gradients sum to the global mean's.
  float forward_backward(const TokenBatch& batch, AttentionProvider& attention,
                         float dloss = 1.0f);

  // --- phases (see the top of this file) ---
  void begin(const TokenBatch& batch);  // copies the batch, sizes the workspace, embeds
  void layer_forward_qkv(int l);
  void layer_forward_post_attention(int l);
  float head_forward();                 // needs targets
  void zero_grads();
  void head_backward(float dloss);      // gradients accumulate (+=) from here on
  void layer_backward_post_attention(int l);
  void layer_backward_qkv(int l);
  void embedding_backward();             // a no-op on a stage without the embedding
  // Every layer of the stage, through `attention` (forward after begin(); backward
  // after head_backward() or after writing residual_grad()).
  void forward_layers(AttentionProvider& attention);
  void backward_layers(AttentionProvider& attention);

  // --- pipeline stages and microbatches (see the top of this file) ---
  void use_slot(int slot);
  int slot() const { return slot_; }
  float* input_residual();                       // (rows, d): the first layer's input
  float* output_residual() { return ws_.x_final; }  // (rows, d): after the stage's last layer
  float* residual_grad() { return ws_.dres; }       // (rows, d)

  AttentionBatch attention_batch() const;
  LayerActivations& activations(int l) { return act(l); }  // l global
  float* attention_grad_out() { return ws_.datt; }  // dL/d att of the layer being back-propagated
  float* dq() { return ws_.dq; }                    // (n, heads, head_dim)
  float* dk() { return ws_.dk; }                    // (n, kv_heads, head_dim)
  float* dv() { return ws_.dv; }
  const float* logits() const { return ws_.logits; }  // (n, vocab), valid after head_forward
  // After head_forward: rows whose target is valid and is the logits' argmax
  // (the first maximum). Evaluation's answer accuracy (runtime/data/recall.h).
  int64_t correct_predictions() const;
  const float* token_losses() const { return ws_.losses; }  // (n), valid after head_forward
  const int64_t* positions() const { return ws_.positions.data(); }
  int64_t rows() const { return ws_.rows; }

 private:
  void size_workspace(int64_t rows);
  void check_layer(int l, const char* phase) const;  // InputError("layer") when out of range
  float* w(int64_t offset) { return params_.data() + offset; }
  float* g(int64_t offset) { return grads_.data() + offset; }

  ParamLayout layout_;
  ModelOptions options_;
  const kernels::Backend* k_;  // the device's kernels; every buffer below lives there
  kernels::BackendBuffer<float> params_, grads_;

  kernels::BackendBuffer<float> fixed_embedding_;  // (vocab, d) or empty

  // Everything one batch (microbatch) needs, swapped in and out by use_slot.
  struct Workspace {
    int64_t sequences = 0, tokens = 0, rows = 0;
    bool has_targets = false;
    kernels::BackendBuffer<int32_t> inputs, targets;  // sized by the workspace
    kernels::BackendBuffer<int64_t> positions_dev;    // positions on the device (RoPE)
    std::vector<int64_t> positions;                   // host: attention_batch(), checks
    kernels::BackendBuffer<float> workspace;
    std::vector<LayerActivations> acts;               // the stage's layers, first to last
    float *x_final = nullptr, *xf = nullptr, *rstdf = nullptr, *logits = nullptr;
    float *losses = nullptr, *lse = nullptr;
    // Backward scratch: residual-stream gradient, a (n, d) temporary, and the
    // attention gradients handed to and from the provider.
    float *dres = nullptr, *dxn = nullptr, *datt = nullptr, *dh = nullptr;
    float *dq = nullptr, *dk = nullptr, *dv = nullptr;
  };
  LayerActivations& act(int l) { return ws_.acts[static_cast<size_t>(l - layout_.first_layer())]; }
  Workspace ws_;                  // the current slot's
  std::vector<Workspace> slots_;  // the others' (slots_[slot_] is empty while in use)
  int slot_ = 0;
};

}  // namespace lowband::model
