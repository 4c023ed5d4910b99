#include "runtime/compress/identity_codec.h"

#include <algorithm>


namespace lowband::compress {

IdentityCodec::IdentityCodec(int kv_heads, int head_dim, int bytes_per_element)
    : kv_heads_(kv_heads), head_dim_(head_dim), bytes_per_element_(bytes_per_element) {
  check_kv_shape(kv_heads, head_dim, bytes_per_element);
}

std::string IdentityCodec::describe() const { return "none (uncompressed K/V)"; }

double IdentityCodec::message_bytes(KvTensor, int64_t n) const {
  return static_cast<double>(n) * kv_heads_ * head_dim_ * bytes_per_element_;
}

void IdentityCodec::encode(const KvBlockId& id, int64_t n, const float* z, CodecMessage& out) {
  out.values.assign(z, z + count(n));
  out.indices.clear();
  out.codes.clear();
  out.wire_bytes = message_bytes(id.tensor, n);
}

void IdentityCodec::decode(const KvBlockId& id, int64_t n, const CodecMessage& in, float* z_hat) {
  check_layout(in.layout(), message_layout(id.tensor, n), "IdentityCodec::decode");
  std::copy(in.values.begin(), in.values.end(), z_hat);
}

void IdentityCodec::encode_gradient(const KvBlockId& id, int64_t n, const float* dz_hat, CodecGradient& out) {
  out.values.assign(dz_hat, dz_hat + count(n));
  out.wire_bytes = gradient_message_bytes(id.tensor, n);
}

void IdentityCodec::decode_gradient(const KvBlockId& id, int64_t n, const CodecGradient& summed, float* dz) {
  check_gradient(summed, gradient_floats(id.tensor, n), "IdentityCodec::decode_gradient");
  for (size_t i = 0; i < summed.values.size(); ++i) dz[i] += summed.values[i];
}

}  // namespace lowband::compress
