#include "runtime/compress/mos_codec.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/error.h"
#include "kernels/rope.h"
#include "kernels/subspace.h"
#include "runtime/compress/mos_random.h"
#include "runtime/compress/mos_rotation.h"

namespace lowband::compress {
namespace {

// kMoreGenerators: the generators A_j, j >= 1, of compression.rotation_params > 1
// (A_0 keeps kGenerator's stream, as with one generator).
enum Stream : int64_t { kGenerator = 1, kRandomU0 = 2, kRandomTheta = 3, kMoreGenerators = 4 };

}  // namespace

MosOptions mos_options_from(const Scenario& s) {
  MosOptions o;
  o.layers = s.model.layers;
  o.kv_heads = s.model.kv_heads;
  o.head_dim = s.model.head_dim();
  o.k_rank = s.compression.k_rank(o.head_dim);
  o.v_rank = s.compression.v_rank(o.head_dim);
  o.bytes_per_element = s.model.bytes_per_element;
  o.warmup_steps = s.compression.warmup_steps;
  o.rotation = s.compression.rotation;
  o.rotation_params = s.compression.rotation_params;
  o.warm_start = s.compression.warm_start;
  o.k_frame = s.compression.k_frame;
  o.compress_final_layer = s.compression.compress_final_layer;
  o.rope_theta = kernels::kRopeThetaDefault;  // the scenario has no RoPE key; the model uses the default
  o.seed = s.training.seed;
  return o;
}

MosCodec::MosCodec(const MosOptions& o) : opt_(o), errors_(std::max(o.layers, 1)) {
  if (o.layers < 1) throw InputError("model.layers", "must be at least 1");
  if (o.kv_heads < 1) throw InputError("model.kv_heads", "must be at least 1");
  if (o.head_dim < 1) throw InputError("model.d_model", "head_dim must be at least 1");
  if (o.k_rank < 1 || o.k_rank > o.head_dim)
    throw InputError("compression.k_rank", "expected 1.." + std::to_string(o.head_dim) + ", got " + std::to_string(o.k_rank));
  if (o.v_rank < 1 || o.v_rank > o.head_dim)
    throw InputError("compression.v_rank", "expected 1.." + std::to_string(o.head_dim) + ", got " + std::to_string(o.v_rank));
  if (o.bytes_per_element < 1) throw InputError("model.bytes_per_element", "must be at least 1");
  if (o.warmup_steps < 0) throw InputError("compression.warmup_steps", "must be >= 0");
  if (!o.warm_start && o.warmup_steps != 0)
    throw InputError("compression.warmup_steps", "warm_start is false: expected 0");
  if (o.rotation_params < 1 || (o.rotation == MosRotation::fixed && o.rotation_params != 1))
    throw InputError("compression.rotation_params",
                     "expected 1" + std::string(o.rotation == MosRotation::fixed ? " with rotation fixed" : " or more") +
                         ", got " + std::to_string(o.rotation_params));
  const int keys = o.layers * 2 * o.kv_heads;
  bases_.resize(keys);
  if (o.rotation == MosRotation::learned) {
    params_.assign(static_cast<size_t>(keys) * o.rotation_params * (o.head_dim + 1), 0.0f);  // ψ = 0, b = 0: θ = 0, U = U₀
    grads_.assign(params_.size(), 0.0f);
  }
  if (!o.warm_start) fit({}, std::vector<int64_t>(keys, 0));
}

std::string MosCodec::describe() const {
  std::string rot = word_of(mos_rotation_words(), opt_.rotation);
  if (m() > 1) rot += " (" + std::to_string(m()) + " generators)";
  return "mos (K rank " + std::to_string(opt_.k_rank) +
         (opt_.k_frame == KFrame::pre_rope ? " before RoPE" : " after RoPE") + ", V rank " + std::to_string(opt_.v_rank) + " of " +
         std::to_string(opt_.head_dim) + "; rotation " + rot + "; " +
         (opt_.warm_start ? "U0 from " + std::to_string(opt_.warmup_steps) + " warm-up steps" : std::string("random U0")) +
         (opt_.compress_final_layer ? "" : "; final layer uncompressed") + ")";
}

bool MosCodec::compresses_layer(int layer) const {
  CompressionConfig c;
  c.method = CompressionMethod::mos;
  c.compress_final_layer = opt_.compress_final_layer;
  return c.kv_layer_compressed(layer, opt_.layers);
}

void MosCodec::zero_grads() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

void MosCodec::begin_step(int step) {
  step_ = step;
  sent_.clear();
  received_.clear();
  errors_.clear();
  if (!fitted_ && step >= opt_.warmup_steps) {
    fit(grams_, gram_rows_.empty() ? std::vector<int64_t>(bases_.size(), 0) : gram_rows_);
    grams_.clear();
    gram_rows_.clear();
  } else if (!fitted_ && step + 1 == opt_.warmup_steps) {
    // The last warm-up step: observe every block (bounded: d² floats per key).
    const size_t d = opt_.head_dim;
    grams_.assign(bases_.size() * d * d, 0.0f);
    gram_rows_.assign(bases_.size(), 0);
  }
}

GramSums MosCodec::gram_sums() {
  if (grams_.empty()) return {};
  return {grams_.data(), int64_t(grams_.size()), gram_rows_.data(), int64_t(gram_rows_.size())};
}

// Deterministic: the same Gram sums give the same U₀ on every rank.
void MosCodec::fit(const std::vector<float>& grams, const std::vector<int64_t>& rows) {
  const int64_t d = opt_.head_dim;
  for (int layer = 0; layer < opt_.layers; ++layer)
    for (KvTensor t : {KvTensor::k, KvTensor::v})
      for (int h = 0; h < opt_.kv_heads; ++h) {
        const int k = key(layer, t, h);
        const int64_t r = rank(t);
        Basis& b = bases_[k];
        b.u0.assign(d * r, 0.0f);
        if (rows[k] > 0)
          kernels::detail::top_eigenvectors(d, r, grams.data() + size_t(k) * d * d, b.u0.data(), nullptr);
        else
          b.u0 = mos::random_orthonormal(d, r, mos::stream_key(opt_.seed, {kRandomU0, layer, int(t), h}));
        auto a = mos::random_skew_generator(d, mos::stream_key(opt_.seed, {kGenerator, layer, int(t), h}));
        b.au0.resize(size_t(m()) * d * r);
        b.a2u0.resize(size_t(m()) * m() * d * r);
        if (m() == 1) {
          kernels::cpu::subspace_generator_products(d, r, a.data(), b.u0.data(), b.au0.data(), b.a2u0.data());
          continue;
        }
        for (int j = 1; j < m(); ++j) {
          const uint64_t stream = mos::stream_key(opt_.seed, {kMoreGenerators, layer, int(t), h, j});
          const auto aj = mos::random_skew_generator(d, stream);
          a.insert(a.end(), aj.begin(), aj.end());
        }
        mos::rotation_products(d, r, m(), a.data(), b.u0.data(), b.au0.data(), b.a2u0.data());
      }
  fitted_ = true;
}

void MosCodec::check_id(const KvBlockId& id, int64_t n, const char* where) const {
  if (id.layer < 0 || id.layer >= opt_.layers)
    throw std::out_of_range(std::string(where) + ": layer " + std::to_string(id.layer) + " outside 0.." +
                            std::to_string(opt_.layers - 1));
  if (n < 0) throw std::out_of_range(std::string(where) + ": negative row count");
}

void MosCodec::check_positions(const KvBlockId& id, int64_t n, const char* where) const {
  if (unrotates(id) && id.positions == nullptr && n > 0)  // fail at step 0, not after the warm-up
    throw std::logic_error(std::string(where) +
                           ": compression.k_frame \"pre_rope\" needs KvBlockId::positions for K blocks "
                           "(or set k_frame \"post_rope\")");
}

std::vector<float> MosCodec::rotated(int layer, KvTensor t, int head, const float* theta) const {
  const Basis& b = bases_[key(layer, t, head)];
  std::vector<float> u(size_t(opt_.head_dim) * rank(t));
  mos::rotated_basis({opt_.head_dim, rank(t), m(), b.u0.data(), b.au0.data(), b.a2u0.data()}, theta, u.data());
  return u;
}

void MosCodec::theta_gradient(int layer, KvTensor t, int head, const float* theta, const float* g,
                              float* dtheta) const {
  const Basis& b = bases_[key(layer, t, head)];
  mos::rotation_theta_gradient({opt_.head_dim, rank(t), m(), b.u0.data(), b.au0.data(), b.a2u0.data()}, theta, g,
                               dtheta);
}

MessageLayout MosCodec::message_layout(KvTensor t, int64_t n) const {
  if (!fitted_) return {n * opt_.kv_heads * opt_.head_dim, 0, 0};
  return {opt_.kv_heads * n * rank(t) + theta_count(), 0, 0};
}

int64_t MosCodec::gradient_floats(KvTensor t, int64_t n) const {
  if (!fitted_) return n * opt_.kv_heads * opt_.head_dim;
  return opt_.kv_heads * n * rank(t) + (opt_.rotation == MosRotation::learned ? opt_.kv_heads * m() : 0);
}

double MosCodec::identity_bytes(int64_t n) const {
  return static_cast<double>(n) * opt_.kv_heads * opt_.head_dim * opt_.bytes_per_element;
}

double MosCodec::message_bytes(KvTensor t, int64_t n) const {
  const double theta_bytes = opt_.rotation == MosRotation::fixed ? 0.0 : 4.0 * m();
  return opt_.kv_heads * (static_cast<double>(n) * rank(t) * opt_.bytes_per_element + theta_bytes);
}

double MosCodec::gradient_message_bytes(KvTensor t, int64_t n) const {
  // dθ travels back only where θ is learned.
  const double theta_bytes = opt_.rotation == MosRotation::learned ? 4.0 * m() : 0.0;
  return opt_.kv_heads * (static_cast<double>(n) * rank(t) * opt_.bytes_per_element + theta_bytes);
}

void MosCodec::theta_for(const KvBlockId& id, int head, const float* mean, float* theta) const {
  switch (opt_.rotation) {
    case MosRotation::fixed:
      std::fill(theta, theta + m(), 0.0f);
      return;
    case MosRotation::random: {
      // One stream per (step, block, head); θⱼ its j-th draw (θ₀ as with one generator).
      mos::Rng rng(mos::stream_key(opt_.seed, {kRandomTheta, step_, id.layer, int(id.tensor), id.owner, id.chunk,
                                               id.sequence, head}));
      for (int j = 0; j < m(); ++j) theta[j] = static_cast<float>((2.0 * rng.uniform() - 1.0) * kRandomThetaMax);
      return;
    }
    case MosRotation::learned:
      break;
  }
  for (int j = 0; j < m(); ++j) {
    const float* psi = params_.data() + param_offset(id.layer, id.tensor, head) + int64_t(j) * (opt_.head_dim + 1);
    double x = psi[opt_.head_dim];  // b
    for (int e = 0; e < opt_.head_dim; ++e) x += double(psi[e]) * mean[e];
    theta[j] = static_cast<float>(x);
  }
}

float MosCodec::theta(const KvBlockId& id, int head, int j) const {
  const auto it = sent_.find(BlockKey{id.layer, int(id.tensor), id.owner, id.chunk, id.sequence});
  if (it == sent_.end() || head < 0 || head >= opt_.kv_heads || j < 0 || j >= m())
    throw std::out_of_range("MosCodec::theta: no compressed encode of this block this step");
  return it->second.theta[size_t(head) * m() + j];
}

double MosCodec::reconstruction_error(int layer, KvTensor t) const {
  if (layer < 0 || layer >= opt_.layers) throw std::out_of_range("MosCodec::reconstruction_error: layer");
  const auto all = errors_.relative(t);  // empty: uncompressed, or no block (or only zeros) yet
  return all.empty() ? 0.0 : all[size_t(layer)];
}

std::vector<double> MosCodec::reconstruction_errors(KvTensor t) const {
  if (!fitted_) return {};  // warm-up: nothing is compressed, so there is no error to report
  return errors_.relative(t);  // empty when no block this step (P = 1: nothing crosses a link)
}

}  // namespace lowband::compress
