// The MoS codec's four halves (kv_codec.h): the owner's encode and
// decode_gradient, the receiver's decode and encode_gradient.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/matmul.h"
#include "kernels/rope.h"
#include "kernels/subspace.h"
#include "runtime/compress/mos_codec.h"
#include "runtime/compress/mos_rotation.h"

namespace lowband::compress {
namespace {

// Rows of head h of a (n, heads, d) block -> a contiguous (n, d) matrix.
void gather_head(int64_t n, int heads, int d, int h, const float* block, float* out) {
  for (int64_t i = 0; i < n; ++i) std::copy_n(block + (i * heads + h) * d, d, out + i * d);
}

const char* tensor_name(KvTensor t) { return t == KvTensor::k ? "K" : "V"; }

template <class Map>
const typename Map::mapped_type& find_block(const Map& blocks, const KvBlockId& id, int64_t n, const char* where,
                                            const char* what) {
  const auto it = blocks.find({id.layer, int(id.tensor), id.owner, id.chunk, id.sequence});
  if (it == blocks.end() || it->second.n != n)
    throw std::logic_error(std::string(where) + ": no " + what + " of this block (layer " + std::to_string(id.layer) +
                           " " + tensor_name(id.tensor) + ", owner " + std::to_string(id.owner) + ", chunk " +
                           std::to_string(id.chunk) + ") with " + std::to_string(n) + " rows this step");
  return it->second;
}

}  // namespace

void MosCodec::accumulate_grams(const KvBlockId& id, int64_t n, const float* src) {
  const int H = opt_.kv_heads, d = opt_.head_dim;
  std::vector<float> zh(n * d);
  for (int h = 0; h < H; ++h) {
    const int k = key(id.layer, id.tensor, h);
    gather_head(n, H, d, h, src, zh.data());
    kernels::cpu::matmul(kernels::Trans::yes, kernels::Trans::no, d, d, n, 1.0f, zh.data(), d, zh.data(), d, 1.0f,
                         grams_.data() + size_t(k) * d * d, d);
    gram_rows_[k] += n;
  }
}

void MosCodec::encode(const KvBlockId& id, int64_t n, const float* z, CodecMessage& out) {
  check_id(id, n, "MosCodec::encode");
  check_positions(id, n, "MosCodec::encode");
  const int H = opt_.kv_heads, d = opt_.head_dim;
  const int64_t count = n * H * d;
  const bool unrotate = unrotates(id);
  out.indices.clear();
  out.codes.clear();
  // K in its pre-RoPE frame: the rows un-rotated by their positions (RoPE is orthogonal).
  // The warm-up's statistics only of the layers that will compress.
  const bool observe = !grams_.empty() && compresses_layer(id.layer);
  std::vector<float> pre;
  const float* src = z;
  if (unrotate && (compresses(id) || observe)) {
    pre.resize(count);
    kernels::cpu::rope_backward(z, id.positions, n, H, d, pre.data(), opt_.rope_theta);
    src = pre.data();
  }
  if (!compresses(id)) {
    out.values.assign(z, z + count);
    if (observe) accumulate_grams(id, n, src);
    out.wire_bytes = identity_bytes(n);
    return;
  }
  const int64_t r = rank(id.tensor);
  Sent& s = sent_[BlockKey{id.layer, int(id.tensor), id.owner, id.chunk, id.sequence}];
  s.n = n;
  s.z.assign(src, src + count);
  s.theta.assign(size_t(H) * m(), 0.0f);
  s.mean.assign(H * d, 0.0f);
  s.positions.clear();
  if (unrotate) s.positions.assign(id.positions, id.positions + n);
  out.values.assign(H * n * r + theta_count(), 0.0f);
  std::vector<float> zh(n * d), zh_hat(n * d);  // zh_hat: what receivers will see, for the error figure
  double err_sq = 0, norm_sq = 0;
  for (int h = 0; h < H; ++h) {
    gather_head(n, H, d, h, src, zh.data());
    float* mean = s.mean.data() + h * d;
    for (int e = 0; e < d; ++e) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += zh[i * d + e];
      mean[e] = n > 0 ? static_cast<float>(sum / n) : 0.0f;
    }
    float* theta = s.theta.data() + size_t(h) * m();
    theta_for(id, h, mean, theta);
    const Basis& b = bases_[key(id.layer, id.tensor, h)];
    const kernels::Subspace sub{d, r, b.u0.data(), b.au0.data(), b.a2u0.data()};
    float* c = out.values.data() + h * n * r;
    if (n > 0 && m() == 1) {
      kernels::cpu::subspace_project(sub, theta[0], n, zh.data(), c);
      kernels::cpu::subspace_reconstruct(sub, theta[0], n, c, zh_hat.data());
    } else if (n > 0) {
      const auto u = rotated(id.layer, id.tensor, h, theta);
      mos::project(n, d, r, zh.data(), u.data(), c);
      mos::reconstruct(n, d, r, c, u.data(), zh_hat.data());
    }
    for (int64_t i = 0; i < n * d; ++i) {
      const float x = zh[i], y = zh_hat[i];
      err_sq += double(x - y) * double(x - y);
      norm_sq += double(x) * double(x);
    }
  }
  if (theta_count()) std::copy(s.theta.begin(), s.theta.end(), out.values.end() - theta_count());
  errors_.add(id.layer, id.tensor, err_sq, norm_sq);
  out.wire_bytes = message_bytes(id.tensor, n);
}

void MosCodec::decode(const KvBlockId& id, int64_t n, const CodecMessage& in, float* z_hat) {
  check_id(id, n, "MosCodec::decode");
  check_positions(id, n, "MosCodec::decode");
  if (!compresses(id)) {
    check_layout(in.layout(), {n * opt_.kv_heads * opt_.head_dim, 0, 0}, "MosCodec::decode");
    std::copy(in.values.begin(), in.values.end(), z_hat);
    return;
  }
  check_layout(in.layout(), message_layout(id.tensor, n), "MosCodec::decode");
  const int H = opt_.kv_heads, d = opt_.head_dim;
  const int64_t count = n * H * d, r = rank(id.tensor);
  const bool unrotate = unrotates(id);
  Received& rcv = received_[BlockKey{id.layer, int(id.tensor), id.owner, id.chunk, id.sequence}];
  rcv.n = n;
  rcv.c.assign(in.values.begin(), in.values.begin() + H * n * r);
  rcv.theta.assign(size_t(H) * m(), 0.0f);  // fixed rotation: θ = 0, not sent
  if (theta_count()) std::copy(in.values.end() - theta_count(), in.values.end(), rcv.theta.begin());
  rcv.positions.clear();
  if (unrotate) rcv.positions.assign(id.positions, id.positions + n);
  std::vector<float> out_pre(unrotate ? count : 0);
  float* out = unrotate ? out_pre.data() : z_hat;
  std::vector<float> zh_hat(n * d);
  for (int h = 0; h < H; ++h) {
    const Basis& b = bases_[key(id.layer, id.tensor, h)];
    const kernels::Subspace sub{d, r, b.u0.data(), b.au0.data(), b.a2u0.data()};
    const float* theta = rcv.theta.data() + size_t(h) * m();
    const float* c = rcv.c.data() + h * n * r;
    if (n > 0 && m() == 1) kernels::cpu::subspace_reconstruct(sub, theta[0], n, c, zh_hat.data());
    else if (n > 0) mos::reconstruct(n, d, r, c, rotated(id.layer, id.tensor, h, theta).data(), zh_hat.data());
    for (int64_t i = 0; i < n; ++i) std::copy_n(zh_hat.data() + i * d, d, out + (i * H + h) * d);
  }
  if (unrotate) kernels::cpu::rope_forward(out, id.positions, n, H, d, z_hat, opt_.rope_theta);
}

void MosCodec::encode_gradient(const KvBlockId& id, int64_t n, const float* dz_hat, CodecGradient& out) {
  check_id(id, n, "MosCodec::encode_gradient");
  const int H = opt_.kv_heads, d = opt_.head_dim;
  const int64_t count = n * H * d;
  if (!compresses(id)) {
    out.values.assign(dz_hat, dz_hat + count);
    out.wire_bytes = identity_bytes(n);
    return;
  }
  const Received& rcv = find_block(received_, id, n, "MosCodec::encode_gradient", "decode");
  // Pre-RoPE frame: Ẑ = R·Ŷ, so dŶ = Rᵀ·dẐ.
  std::vector<float> dpre;
  const float* grad_in = dz_hat;
  if (!rcv.positions.empty()) {
    dpre.resize(count);
    kernels::cpu::rope_backward(dz_hat, rcv.positions.data(), n, H, d, dpre.data(), opt_.rope_theta);
    grad_in = dpre.data();
  }
  const int64_t r = rank(id.tensor);
  const bool learned = opt_.rotation == MosRotation::learned;
  out.values.assign(gradient_floats(id.tensor, n), 0.0f);
  std::vector<float> dzh_hat(n * d), g(m() > 1 ? size_t(d) * r : 0);
  for (int h = 0; h < H && n > 0; ++h) {
    gather_head(n, H, d, h, grad_in, dzh_hat.data());
    const Basis& b = bases_[key(id.layer, id.tensor, h)];
    const kernels::Subspace sub{d, r, b.u0.data(), b.au0.data(), b.a2u0.data()};
    // dC and the part of dθ through the reconstruction Ẑ = C·U(θ)ᵀ.
    const float* theta = rcv.theta.data() + size_t(h) * m();
    const float* c = rcv.c.data() + h * n * r;
    float* dc = out.values.data() + h * n * r;
    if (m() == 1) {
      const float dtheta = kernels::cpu::subspace_reconstruct_backward(sub, theta[0], n, c, dzh_hat.data(), dc);
      if (learned) out.values[H * n * r + h] = dtheta;
      continue;
    }
    mos::project(n, d, r, dzh_hat.data(), rotated(id.layer, id.tensor, h, theta).data(), dc);  // dC = dẐ·U
    if (!learned) continue;
    mos::outer_sum(n, d, r, dzh_hat.data(), c, g.data());  // dL/dU = dẐᵀ·C
    theta_gradient(id.layer, id.tensor, h, theta, g.data(), out.values.data() + H * n * r + size_t(h) * m());
  }
  out.wire_bytes = gradient_message_bytes(id.tensor, n);
}

void MosCodec::decode_gradient(const KvBlockId& id, int64_t n, const CodecGradient& summed, float* dz) {
  check_id(id, n, "MosCodec::decode_gradient");
  const int H = opt_.kv_heads, d = opt_.head_dim;
  const int64_t count = n * H * d;
  check_gradient(summed, compresses(id) ? gradient_floats(id.tensor, n) : count, "MosCodec::decode_gradient");
  if (!compresses(id)) {
    for (int64_t i = 0; i < count; ++i) dz[i] += summed.values[i];
    return;
  }
  const Sent& s = find_block(sent_, id, n, "MosCodec::decode_gradient", "encode");
  const bool unrotate = !s.positions.empty();
  // Pre-RoPE frame: Y = Rᵀ·Z, so dZ = R·dY.
  std::vector<float> dy;
  float* grad_out = dz;
  if (unrotate) {
    dy.assign(count, 0.0f);
    grad_out = dy.data();
  }
  const int64_t r = rank(id.tensor);
  const bool learned = opt_.rotation == MosRotation::learned;
  std::vector<float> zh(n * d), dzh(n * d), g(m() > 1 ? size_t(d) * r : 0), dtheta(static_cast<size_t>(m()));
  for (int h = 0; h < H && n > 0; ++h) {
    gather_head(n, H, d, h, s.z.data(), zh.data());
    const Basis& b = bases_[key(id.layer, id.tensor, h)];
    const kernels::Subspace sub{d, r, b.u0.data(), b.au0.data(), b.a2u0.data()};
    const float* theta = s.theta.data() + size_t(h) * m();
    const float* dc = summed.values.data() + h * n * r;
    // The receivers' summed part of dθ, plus the part through the projection C = Z·U(θ).
    for (int j = 0; j < m(); ++j) dtheta[j] = learned ? summed.values[H * n * r + size_t(h) * m() + j] : 0.0f;
    if (m() == 1) {
      dtheta[0] += kernels::cpu::subspace_project_backward(sub, theta[0], n, zh.data(), dc, dzh.data());
    } else {
      mos::reconstruct(n, d, r, dc, rotated(id.layer, id.tensor, h, theta).data(), dzh.data());  // dZ = dC·Uᵀ
      std::vector<float> through(size_t(m()), 0.0f);
      if (learned) {
        mos::outer_sum(n, d, r, zh.data(), dc, g.data());  // dL/dU = Zᵀ·dC
        theta_gradient(id.layer, id.tensor, h, theta, g.data(), through.data());
      }
      for (int j = 0; j < m(); ++j) dtheta[j] += through[j];
    }
    if (learned) {
      // θⱼ = ψⱼ·mean + bⱼ: dψⱼ += dθⱼ·mean, dbⱼ += dθⱼ, and each row of Z gets Σⱼ dθⱼ·ψⱼ/n.
      for (int j = 0; j < m(); ++j) {
        const int64_t off = param_offset(id.layer, id.tensor, h) + int64_t(j) * (d + 1);
        const float* psi = params_.data() + off;
        float* dpsi = grads_.data() + off;
        const float* mean = s.mean.data() + h * d;
        for (int e = 0; e < d; ++e) dpsi[e] += dtheta[j] * mean[e];
        dpsi[d] += dtheta[j];
        const float per_row = dtheta[j] / static_cast<float>(n);
        for (int64_t i = 0; i < n; ++i)
          for (int e = 0; e < d; ++e) dzh[i * d + e] += per_row * psi[e];
      }
    }
    for (int64_t i = 0; i < n; ++i)
      for (int e = 0; e < d; ++e) grad_out[(i * H + h) * d + e] += dzh[i * d + e];
  }
  if (unrotate) {
    kernels::cpu::rope_forward(dy.data(), s.positions.data(), n, H, d, dy.data(), opt_.rope_theta);
    for (int64_t i = 0; i < count; ++i) dz[i] += dy[i];
  }
}

}  // namespace lowband::compress
