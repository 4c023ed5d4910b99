#include "runtime/compress/dry_codec.h"

#include <utility>

#include "runtime/compress/make_codec.h"

namespace lowband::compress {

DryKvCodec::DryKvCodec(std::unique_ptr<KvCodec> real, const IdentityCodec& plain)
    : real_(std::move(real)), plain_(plain) {}

void DryKvCodec::encode(const KvBlockId& id, int64_t n, const float*, CodecMessage& out) {
  out = CodecMessage{};
  out.wire_bytes = compressing_ ? real_->message_bytes(id.tensor, n) : plain_.message_bytes(id.tensor, n);
}

void DryKvCodec::encode_gradient(const KvBlockId& id, int64_t n, const float*, CodecGradient& out) {
  out = CodecGradient{};
  out.wire_bytes =
      compressing_ ? real_->gradient_message_bytes(id.tensor, n) : plain_.gradient_message_bytes(id.tensor, n);
}

std::unique_ptr<KvCodec> make_dry_kv_codec(const Scenario& s) {
  const ModelConfig& m = s.model;
  return std::make_unique<DryKvCodec>(make_kv_codec(s), IdentityCodec(m.kv_heads, m.head_dim(), m.bytes_per_element));
}

}  // namespace lowband::compress
