#include "runtime/model/param_layout.h"

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

#include "common/error.h"

namespace lowband::model {
namespace {

constexpr double kInitStd = 0.02;

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in (0, 1] from the top 53 bits: never 0, so log() is finite.
double uniform_open0(std::mt19937_64& rng) {
  return (double(rng() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

void require_positive(int value, const char* field) {
  if (value <= 0)
    throw InputError(std::string("model.") + field,
                     "must be positive, got " + std::to_string(value));
}

}  // namespace

void check_model_config(const ModelConfig& c) {
  require_positive(c.layers, "layers");
  require_positive(c.d_model, "d_model");
  require_positive(c.heads, "heads");
  require_positive(c.kv_heads, "kv_heads");
  require_positive(c.ffn_hidden, "ffn_hidden");
  require_positive(c.vocab, "vocab");
  if (c.d_model % c.heads != 0)
    throw InputError("model.heads", "must divide d_model (" + std::to_string(c.d_model) + ")");
  if (c.heads % c.kv_heads != 0)
    throw InputError("model.kv_heads", "must divide heads (" + std::to_string(c.heads) + ")");
  if (c.head_dim() % 2 != 0)
    throw InputError("model.heads", "head_dim = d_model / heads must be even for RoPE, got " +
                                        std::to_string(c.head_dim()));
}

ParamLayout::ParamLayout(const ModelConfig& config, StageSpan span) : config_(config), span_(span) {
  check_model_config(config);
  if (span.first_layer < 0 || span.end_layer(config) > config.layers || span.end_layer(config) < span.first_layer)
    throw std::invalid_argument("ParamLayout: layers [" + std::to_string(span.first_layer) + ", " +
                                std::to_string(span.end_layer(config)) + ") outside the model's " +
                                std::to_string(config.layers));
  if (config.tie_embeddings && span.embedding != span.head)
    throw InputError("model.tie_embeddings", "a tied LM head is the embedding: a pipeline stage that holds one "
                                             "must hold the other (set it false for pipeline parallelism)");
  // Stream numbers are the tensors' indices in the whole model: embedding 0,
  // layer l's nine tensors 1 + 9l .. 9 + 9l, then final_norm and lm_head.
  constexpr int64_t kPerLayer = 9;
  const int64_t d = config.d_model, dkv = config.d_kv(), f = config.ffn_hidden;
  if (span.embedding) embedding_ = add("embedding", config.vocab, d, TensorRole::matrix, 0);
  for (int l = span.first_layer; l < span.end_layer(config); ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    int64_t stream = 1 + kPerLayer * l;
    LayerOffsets o{};
    o.attn_norm = add(p + "attn_norm", 1, d, TensorRole::norm, stream++);
    o.wq = add(p + "wq", d, d, TensorRole::matrix, stream++);
    o.wk = add(p + "wk", dkv, d, TensorRole::matrix, stream++);
    o.wv = add(p + "wv", dkv, d, TensorRole::matrix, stream++);
    o.wo = add(p + "wo", d, d, TensorRole::residual_projection, stream++);
    o.mlp_norm = add(p + "mlp_norm", 1, d, TensorRole::norm, stream++);
    o.w_gate = add(p + "w_gate", f, d, TensorRole::matrix, stream++);
    o.w_up = add(p + "w_up", f, d, TensorRole::matrix, stream++);
    o.w_down = add(p + "w_down", d, f, TensorRole::residual_projection, stream++);
    layers_.push_back(o);
  }
  if (span.head) {
    const int64_t stream = 1 + kPerLayer * config.layers;
    final_norm_ = add("final_norm", 1, d, TensorRole::norm, stream);
    lm_head_ = config.tie_embeddings ? embedding_ : add("lm_head", config.vocab, d, TensorRole::matrix, stream + 1);
  }
}

int64_t ParamLayout::add(const std::string& name, int64_t rows, int64_t cols, TensorRole role, int64_t stream) {
  tensors_.push_back(TensorInfo{name, count_, stream, rows, cols, role});
  count_ += rows * cols;
  return tensors_.back().offset;
}

const TensorInfo& ParamLayout::find(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return t;
  throw InputError("parameter", "no tensor named '" + name + "'");
}

void init_parameters(const ParamLayout& layout, uint64_t seed, float* params) {
  const double residual_std = kInitStd / std::sqrt(2.0 * layout.config().layers);
  for (size_t i = 0; i < layout.tensors().size(); ++i) {
    const TensorInfo& t = layout.tensors()[i];
    float* p = params + t.offset;
    if (t.role == TensorRole::norm) {
      for (int64_t j = 0; j < t.count(); ++j) p[j] = 1.0f;
      continue;
    }
    const double stddev = t.role == TensorRole::residual_projection ? residual_std : kInitStd;
    std::mt19937_64 rng(splitmix64(seed ^ splitmix64(uint64_t(t.stream) + 1)));
    constexpr double kTwoPi = 6.283185307179586;
    for (int64_t j = 0; j < t.count(); j += 2) {
      // Box-Muller: two independent standard normals per pair of uniforms.
      const double r = std::sqrt(-2.0 * std::log(uniform_open0(rng)));
      const double a = kTwoPi * uniform_open0(rng);
      p[j] = float(stddev * r * std::cos(a));
      if (j + 1 < t.count()) p[j + 1] = float(stddev * r * std::sin(a));
    }
  }
}

}  // namespace lowband::model
