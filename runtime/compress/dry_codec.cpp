#include "runtime/compress/dry_codec.h"

#include <utility>

#include "runtime/compress/make_codec.h"

namespace lowband::compress {

DryKvCodec::DryKvCodec(std::shared_ptr<KvCodec> real, const IdentityCodec& plain)
    : real_(std::move(real)), plain_(plain) {}

void DryKvCodec::encode(const KvBlockId& id, int64_t n, const float*, CodecMessage& out) {
  out = CodecMessage{};
  const bool compressed = compressing_ && real_->compresses_layer(id.layer);
  out.wire_bytes = compressed ? real_->message_bytes(id.tensor, n) : plain_.message_bytes(id.tensor, n);
}

void DryKvCodec::encode_gradient(const KvBlockId& id, int64_t n, const float*, CodecGradient& out) {
  out = CodecGradient{};
  const bool compressed = compressing_ && real_->compresses_layer(id.layer);
  out.wire_bytes =
      compressed ? real_->gradient_message_bytes(id.tensor, n) : plain_.gradient_message_bytes(id.tensor, n);
}

void DryBoundaryCodec::encode(int64_t n, const float*, const int32_t*, CodecMessage& out) const {
  out = CodecMessage{};
  out.wire_bytes = real_->message_bytes(n);
}

void DryBoundaryCodec::encode_gradient(int64_t n, const float*, const CodecMessage&, CodecGradient& out) const {
  out = CodecGradient{};
  out.wire_bytes = real_->gradient_bytes(n);
}

std::unique_ptr<KvCodec> make_kv_codec_on(const Scenario& s, kernels::Device device) {
  if (device != kernels::Device::dry) return make_kv_codec(s);
  std::shared_ptr<KvCodec> real;
  return make_dry_kv_codec(s, real);
}

std::unique_ptr<KvCodec> make_dry_kv_codec(const Scenario& s, std::shared_ptr<KvCodec>& real) {
  if (!real) real = make_kv_codec(s);
  const ModelConfig& m = s.model;
  return std::make_unique<DryKvCodec>(real, IdentityCodec(m.kv_heads, m.head_dim(), m.bytes_per_element));
}

std::unique_ptr<BoundaryCodec> make_boundary_codec_on(const Scenario& s, kernels::Device device) {
  if (device != kernels::Device::dry) return make_boundary_codec(s);
  return std::make_unique<DryBoundaryCodec>(make_boundary_codec(s));
}

}  // namespace lowband::compress
