#include "runtime/compress/mos_codec.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/error.h"
#include "kernels/matmul.h"
#include "kernels/rope.h"
#include "kernels/subspace.h"
#include "runtime/compress/mos_random.h"

namespace lowband::compress {
namespace {

enum Stream : int64_t { kGenerator = 1, kRandomU0 = 2, kRandomTheta = 3 };

// Rows of head h of a (n, heads, d) block <-> a contiguous (n, d) matrix.
void gather_head(int64_t n, int heads, int d, int h, const float* block, float* out) {
  for (int64_t i = 0; i < n; ++i) std::copy_n(block + (i * heads + h) * d, d, out + i * d);
}

const char* tensor_name(KvTensor t) { return t == KvTensor::k ? "K" : "V"; }

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
  o.warm_start = s.compression.warm_start;
  o.k_frame = s.compression.k_frame;
  o.rope_theta = kernels::kRopeThetaDefault;  // the scenario has no RoPE key; the model uses the default
  o.seed = s.training.seed;
  return o;
}

MosCodec::MosCodec(const MosOptions& o) : opt_(o) {
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
  const int keys = o.layers * 2 * o.kv_heads;
  bases_.resize(keys);
  if (o.rotation == MosRotation::learned) {
    params_.assign(static_cast<size_t>(keys) * (o.head_dim + 1), 0.0f);  // ψ = 0, b = 0: θ = 0, U = U₀
    grads_.assign(params_.size(), 0.0f);
  }
  err_sq_.assign(o.layers * 2, 0.0);
  norm_sq_.assign(o.layers * 2, 0.0);
  if (!o.warm_start) fit({}, std::vector<int64_t>(keys, 0));
}

std::string MosCodec::describe() const {
  const char* rot = opt_.rotation == MosRotation::learned ? "learned" : opt_.rotation == MosRotation::fixed ? "fixed" : "random";
  return "mos (K rank " + std::to_string(opt_.k_rank) +
         (opt_.k_frame == KFrame::pre_rope ? " before RoPE" : " after RoPE") + ", V rank " + std::to_string(opt_.v_rank) + " of " +
         std::to_string(opt_.head_dim) + "; rotation " + rot + "; " +
         (opt_.warm_start ? "U0 from " + std::to_string(opt_.warmup_steps) + " warm-up steps" : std::string("random U0")) +
         ")";
}

void MosCodec::zero_grads() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

void MosCodec::begin_step(int step) {
  step_ = step;
  saved_.clear();
  std::fill(err_sq_.begin(), err_sq_.end(), 0.0);
  std::fill(norm_sq_.begin(), norm_sq_.end(), 0.0);
  if (!fitted_ && step >= opt_.warmup_steps) {
    fit(grams_, gram_rows_.empty() ? std::vector<int64_t>(bases_.size(), 0) : gram_rows_);
    grams_.clear();
    gram_rows_.clear();
  } else if (!fitted_ && step + 1 == opt_.warmup_steps) {
    // The last warm-up step: observe every block (bounded: d² floats per key).
    const size_t d = opt_.head_dim;
    grams_.assign(bases_.size(), std::vector<float>(d * d, 0.0f));
    gram_rows_.assign(bases_.size(), 0);
  }
}

void MosCodec::fit(const std::vector<std::vector<float>>& grams, const std::vector<int64_t>& rows) {
  const int64_t d = opt_.head_dim;
  for (int layer = 0; layer < opt_.layers; ++layer)
    for (KvTensor t : {KvTensor::k, KvTensor::v})
      for (int h = 0; h < opt_.kv_heads; ++h) {
        const int k = key(layer, t, h);
        const int64_t r = rank(t);
        Basis& b = bases_[k];
        b.u0.assign(d * r, 0.0f);
        if (rows[k] > 0)
          kernels::detail::top_eigenvectors(d, r, grams[k].data(), b.u0.data(), nullptr);
        else
          b.u0 = mos::random_orthonormal(d, r, mos::stream_key(opt_.seed, {kRandomU0, layer, int(t), h}));
        const auto a = mos::random_skew_generator(d, mos::stream_key(opt_.seed, {kGenerator, layer, int(t), h}));
        b.au0.resize(d * r);
        b.a2u0.resize(d * r);
        kernels::cpu::subspace_generator_products(d, r, a.data(), b.u0.data(), b.au0.data(), b.a2u0.data());
      }
  fitted_ = true;
}

void MosCodec::check_id(const KvBlockId& id, int64_t n, const char* where) const {
  if (id.layer < 0 || id.layer >= opt_.layers)
    throw std::out_of_range(std::string(where) + ": layer " + std::to_string(id.layer) + " outside 0.." +
                            std::to_string(opt_.layers - 1));
  if (n < 0) throw std::out_of_range(std::string(where) + ": negative row count");
}

double MosCodec::identity_bytes(int64_t n) const {
  return static_cast<double>(n) * opt_.kv_heads * opt_.head_dim * opt_.bytes_per_element;
}

double MosCodec::message_bytes(KvTensor t, int64_t n) const {
  const double theta_bytes = opt_.rotation == MosRotation::fixed ? 0.0 : 4.0;
  return opt_.kv_heads * (static_cast<double>(n) * rank(t) * opt_.bytes_per_element + theta_bytes);
}

double MosCodec::gradient_message_bytes(KvTensor t, int64_t n) const {
  // dθ travels back only where θ is learned.
  const double theta_bytes = opt_.rotation == MosRotation::learned ? 4.0 : 0.0;
  return opt_.kv_heads * (static_cast<double>(n) * rank(t) * opt_.bytes_per_element + theta_bytes);
}

float MosCodec::theta_for(const KvBlockId& id, int head, const float* mean) const {
  switch (opt_.rotation) {
    case MosRotation::fixed:
      return 0.0f;
    case MosRotation::random: {
      mos::Rng rng(mos::stream_key(opt_.seed, {kRandomTheta, step_, id.layer, int(id.tensor), id.owner, id.chunk,
                                               id.sequence, head}));
      return static_cast<float>((2.0 * rng.uniform() - 1.0) * kRandomThetaMax);
    }
    case MosRotation::learned:
      break;
  }
  const float* psi = params_.data() + param_offset(id.layer, id.tensor, head);
  double theta = psi[opt_.head_dim];  // b
  for (int e = 0; e < opt_.head_dim; ++e) theta += double(psi[e]) * mean[e];
  return static_cast<float>(theta);
}

double MosCodec::forward(const KvBlockId& id, int64_t n, const float* z, float* z_hat) {
  check_id(id, n, "MosCodec::forward");
  const int H = opt_.kv_heads, d = opt_.head_dim;
  const int64_t count = n * H * d;
  const bool unrotate = unrotates(id);
  if (unrotate && id.positions == nullptr && n > 0)  // fail at step 0, not after the warm-up
    throw std::logic_error(
        "MosCodec::forward: compression.k_frame \"pre_rope\" needs KvBlockId::positions for K blocks "
        "(or set k_frame \"post_rope\")");
  // K in its pre-RoPE frame: the rows un-rotated by their positions (RoPE is orthogonal).
  std::vector<float> pre;
  const float* src = z;
  if (unrotate && (fitted_ || !grams_.empty())) {
    pre.resize(count);
    kernels::cpu::rope_backward(z, id.positions, n, H, d, pre.data(), opt_.rope_theta);
    src = pre.data();
  }
  if (!fitted_) {
    std::copy(z, z + count, z_hat);
    if (!grams_.empty()) {
      std::vector<float> zh(n * d);
      for (int h = 0; h < H; ++h) {
        const int k = key(id.layer, id.tensor, h);
        gather_head(n, H, d, h, src, zh.data());
        kernels::cpu::matmul(kernels::Trans::yes, kernels::Trans::no, d, d, n, 1.0f, zh.data(), d, zh.data(), d,
                             1.0f, grams_[k].data(), d);
        gram_rows_[k] += n;
      }
    }
    return identity_bytes(n);
  }
  const int64_t r = rank(id.tensor);
  Saved& s = saved_[BlockKey{id.layer, int(id.tensor), id.owner, id.chunk, id.sequence}];
  s.n = n;
  s.z.assign(src, src + count);
  s.c.assign(H * n * r, 0.0f);
  s.theta.assign(H, 0.0f);
  s.mean.assign(H * d, 0.0f);
  s.positions.clear();
  if (unrotate) s.positions.assign(id.positions, id.positions + n);
  std::vector<float> out_pre(unrotate ? count : 0);
  float* out = unrotate ? out_pre.data() : z_hat;
  std::vector<float> zh(n * d), zh_hat(n * d);
  double err_sq = 0, norm_sq = 0;
  for (int h = 0; h < H; ++h) {
    gather_head(n, H, d, h, src, zh.data());
    float* mean = s.mean.data() + h * d;
    for (int e = 0; e < d; ++e) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += zh[i * d + e];
      mean[e] = n > 0 ? static_cast<float>(sum / n) : 0.0f;
    }
    s.theta[h] = theta_for(id, h, mean);
    const Basis& b = bases_[key(id.layer, id.tensor, h)];
    const kernels::Subspace sub{d, r, b.u0.data(), b.au0.data(), b.a2u0.data()};
    float* c = s.c.data() + h * n * r;
    if (n > 0) {
      kernels::cpu::subspace_project(sub, s.theta[h], n, zh.data(), c);
      kernels::cpu::subspace_reconstruct(sub, s.theta[h], n, c, zh_hat.data());
    }
    for (int64_t i = 0; i < n; ++i)
      for (int e = 0; e < d; ++e) {
        const float x = zh[i * d + e], y = zh_hat[i * d + e];
        out[(i * H + h) * d + e] = y;
        err_sq += double(x - y) * double(x - y);
        norm_sq += double(x) * double(x);
      }
  }
  if (unrotate) kernels::cpu::rope_forward(out, id.positions, n, H, d, z_hat, opt_.rope_theta);
  err_sq_[id.layer * 2 + int(id.tensor)] += err_sq;
  norm_sq_[id.layer * 2 + int(id.tensor)] += norm_sq;
  return message_bytes(id.tensor, n);
}

double MosCodec::backward(const KvBlockId& id, int64_t n, const float* dz_hat, float* dz) {
  check_id(id, n, "MosCodec::backward");
  const int H = opt_.kv_heads, d = opt_.head_dim;
  const int64_t count = n * H * d;
  if (!fitted_) {
    for (int64_t i = 0; i < count; ++i) dz[i] += dz_hat[i];
    return identity_bytes(n);
  }
  const auto it = saved_.find(BlockKey{id.layer, int(id.tensor), id.owner, id.chunk, id.sequence});
  if (it == saved_.end() || it->second.n != n)
    throw std::logic_error("MosCodec::backward: no forward of this block (layer " + std::to_string(id.layer) + " " +
                           tensor_name(id.tensor) + ", owner " + std::to_string(id.owner) + ", chunk " +
                           std::to_string(id.chunk) + ") with " + std::to_string(n) + " rows this step");
  const Saved& s = it->second;
  const bool unrotate = !s.positions.empty();
  // Pre-RoPE frame: Ẑ = R·Ŷ and Y = Rᵀ·Z, so dŶ = Rᵀ·dẐ and dZ = R·dY.
  std::vector<float> dpre, dy;
  const float* grad_in = dz_hat;
  float* grad_out = dz;
  if (unrotate) {
    dpre.resize(count);
    kernels::cpu::rope_backward(dz_hat, s.positions.data(), n, H, d, dpre.data(), opt_.rope_theta);
    grad_in = dpre.data();
    dy.assign(count, 0.0f);
    grad_out = dy.data();
  }
  const int64_t r = rank(id.tensor);
  std::vector<float> zh(n * d), dzh_hat(n * d), dzh(n * d), dc(n * r);
  for (int h = 0; h < H; ++h) {
    if (n == 0) break;
    gather_head(n, H, d, h, s.z.data(), zh.data());
    gather_head(n, H, d, h, grad_in, dzh_hat.data());
    const Basis& b = bases_[key(id.layer, id.tensor, h)];
    const kernels::Subspace sub{d, r, b.u0.data(), b.au0.data(), b.a2u0.data()};
    const float theta = s.theta[h];
    const float dtheta = kernels::cpu::subspace_reconstruct_backward(sub, theta, n, s.c.data() + h * n * r,
                                                                     dzh_hat.data(), dc.data()) +
                         kernels::cpu::subspace_project_backward(sub, theta, n, zh.data(), dc.data(), dzh.data());
    if (opt_.rotation == MosRotation::learned) {
      // θ = ψ·mean + b: dψ += dθ·mean, db += dθ, and each row of Z gets dθ·ψ/n.
      const int64_t off = param_offset(id.layer, id.tensor, h);
      const float* psi = params_.data() + off;
      float* dpsi = grads_.data() + off;
      const float* mean = s.mean.data() + h * d;
      for (int e = 0; e < d; ++e) dpsi[e] += dtheta * mean[e];
      dpsi[d] += dtheta;
      const float per_row = dtheta / static_cast<float>(n);
      for (int64_t i = 0; i < n; ++i)
        for (int e = 0; e < d; ++e) dzh[i * d + e] += per_row * psi[e];
    }
    for (int64_t i = 0; i < n; ++i)
      for (int e = 0; e < d; ++e) grad_out[(i * H + h) * d + e] += dzh[i * d + e];
  }
  if (unrotate) {
    kernels::cpu::rope_forward(dy.data(), s.positions.data(), n, H, d, dy.data(), opt_.rope_theta);
    for (int64_t i = 0; i < count; ++i) dz[i] += dy[i];
  }
  return gradient_message_bytes(id.tensor, n);
}

float MosCodec::theta(const KvBlockId& id, int head) const {
  const auto it = saved_.find(BlockKey{id.layer, int(id.tensor), id.owner, id.chunk, id.sequence});
  if (it == saved_.end() || head < 0 || head >= opt_.kv_heads)
    throw std::out_of_range("MosCodec::theta: no compressed forward of this block this step");
  return it->second.theta[head];
}

double MosCodec::reconstruction_error(int layer, KvTensor t) const {
  const int i = layer * 2 + int(t);
  if (norm_sq_.at(i) == 0) return 0.0;  // uncompressed, or no block (or only zeros) yet
  return std::sqrt(err_sq_[i] / norm_sq_[i]);
}

std::vector<double> MosCodec::reconstruction_errors(KvTensor t) const {
  if (!fitted_) return {};  // warm-up: nothing is compressed, so there is no error to report
  // No block this step (P = 1: nothing crosses a link): no figure rather than zeros.
  if (std::all_of(norm_sq_.begin(), norm_sq_.end(), [](double x) { return x == 0; })) return {};
  std::vector<double> out(size_t(opt_.layers));
  for (int l = 0; l < opt_.layers; ++l) out[size_t(l)] = reconstruction_error(l, t);
  return out;
}

}  // namespace lowband::compress
