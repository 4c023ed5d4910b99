#pragma once
// Where each named tensor of a Llama-style decoder lives in one flat float
// buffer. Parameters, gradients and both AdamW moments use the same layout, so
// an offset found here addresses all four buffers.
//
// Order (each tensor row-major, PyTorch nn.Linear convention W (out, in), y = x Wᵀ):
//   embedding (vocab, d)
//   per layer l: layers.l.attn_norm (d), wq (d, d), wk (d_kv, d), wv (d_kv, d),
//                wo (d, d), mlp_norm (d), w_gate (f, d), w_up (f, d), w_down (d, f)
//   final_norm (d)
//   lm_head (vocab, d)            absent when tie_embeddings (the embedding is used)
// A pipeline stage's layout (StageSpan) holds only its part, in the same order
// and with the same names ("layers.5.wq" stays layer 5), and initialises each
// tensor as the whole model does, so a stage's parameters equal the whole
// model's tensors of the same name.
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/scenario/scenario.h"

namespace lowband::model {

// What a tensor is, for initialisation and weight decay.
enum class TensorRole : uint8_t {
  norm,                 // RMSNorm gain: init 1, no weight decay
  matrix,               // init normal(0, 0.02), weight decay
  residual_projection,  // wo, w_down: normal(0, 0.02 / sqrt(2 * layers)), weight decay
};

struct TensorInfo {
  std::string name;     // "embedding", "layers.3.wq", "final_norm", ...
  int64_t offset = 0;   // first element in the flat buffer
  int64_t stream = 0;   // the tensor's index in the WHOLE model (seeds its init)
  int64_t rows = 0;     // a norm is (1, d)
  int64_t cols = 0;
  TensorRole role = TensorRole::matrix;
  int64_t count() const { return rows * cols; }
  bool decays() const { return role != TensorRole::norm; }
};

// Offsets of one layer's tensors in the flat buffer.
struct LayerOffsets {
  int64_t attn_norm, wq, wk, wv, wo, mlp_norm, w_gate, w_up, w_down;
};

// Throws InputError("model.<field>", ...) unless layers, d_model, heads,
// kv_heads, ffn_hidden and vocab are positive, heads divides d_model, kv_heads
// divides heads and head_dim is even (RoPE).
void check_model_config(const ModelConfig& config);

// The part of the model one pipeline stage holds: layers [first_layer,
// first_layer + layers), the embedding (first stage) and the final norm and LM
// head (last stage). The default is the whole model.
struct StageSpan {
  int first_layer = 0;
  int layers = -1;  // < 0: every layer from first_layer on
  bool embedding = true;
  bool head = true;
  bool whole(const ModelConfig& c) const { return first_layer == 0 && end_layer(c) == c.layers && embedding && head; }
  int end_layer(const ModelConfig& c) const { return layers < 0 ? c.layers : first_layer + layers; }
};

class ParamLayout {
 public:
  // Throws InputError("model.tie_embeddings") for a span that holds the LM head
  // but not the tied embedding (or the reverse), and std::invalid_argument for a
  // span outside the model.
  explicit ParamLayout(const ModelConfig& config, StageSpan span = {});

  const ModelConfig& config() const { return config_; }
  int64_t count() const { return count_; }  // floats in each flat buffer
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // Throws InputError("parameter", ...) for an unknown name.
  const TensorInfo& find(const std::string& name) const;

  const StageSpan& span() const { return span_; }
  int first_layer() const { return span_.first_layer; }
  int end_layer() const { return span_.end_layer(config_); }
  bool has_layer(int l) const { return l >= first_layer() && l < end_layer(); }
  // Offsets; -1 where the span does not hold the tensor.
  int64_t embedding() const { return embedding_; }
  const LayerOffsets& layer(int l) const { return layers_[static_cast<size_t>(l - first_layer())]; }  // l global
  int64_t final_norm() const { return final_norm_; }
  int64_t lm_head() const { return lm_head_; }  // == embedding() when tied

 private:
  int64_t add(const std::string& name, int64_t rows, int64_t cols, TensorRole role, int64_t stream);

  ModelConfig config_;
  StageSpan span_;
  std::vector<TensorInfo> tensors_;
  std::vector<LayerOffsets> layers_;
  int64_t embedding_ = -1, final_norm_ = -1, lm_head_ = -1, count_ = 0;
};

// Fills params (layout.count()) deterministically from seed: each tensor draws
// from its own stream (splitmix64 of seed and tensor index, Box-Muller normals),
// so the result does not depend on the standard library and one tensor's values
// do not shift when another's shape changes.
void init_parameters(const ParamLayout& layout, uint64_t seed, float* params);

}  // namespace lowband::model
