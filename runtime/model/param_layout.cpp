#include "runtime/model/param_layout.h"

#include <cmath>
#include <random>

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

ParamLayout::ParamLayout(const ModelConfig& config) : config_(config) {
  check_model_config(config);
  const int64_t d = config.d_model, dkv = config.d_kv(), f = config.ffn_hidden;
  embedding_ = add("embedding", config.vocab, d, TensorRole::matrix);
  for (int l = 0; l < config.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    LayerOffsets o{};
    o.attn_norm = add(p + "attn_norm", 1, d, TensorRole::norm);
    o.wq = add(p + "wq", d, d, TensorRole::matrix);
    o.wk = add(p + "wk", dkv, d, TensorRole::matrix);
    o.wv = add(p + "wv", dkv, d, TensorRole::matrix);
    o.wo = add(p + "wo", d, d, TensorRole::residual_projection);
    o.mlp_norm = add(p + "mlp_norm", 1, d, TensorRole::norm);
    o.w_gate = add(p + "w_gate", f, d, TensorRole::matrix);
    o.w_up = add(p + "w_up", f, d, TensorRole::matrix);
    o.w_down = add(p + "w_down", d, f, TensorRole::residual_projection);
    layers_.push_back(o);
  }
  final_norm_ = add("final_norm", 1, d, TensorRole::norm);
  lm_head_ = config.tie_embeddings ? embedding_ : add("lm_head", config.vocab, d, TensorRole::matrix);
}

int64_t ParamLayout::add(const std::string& name, int64_t rows, int64_t cols, TensorRole role) {
  tensors_.push_back(TensorInfo{name, count_, rows, cols, role});
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
    std::mt19937_64 rng(splitmix64(seed ^ splitmix64(i + 1)));
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
