#pragma once
// The uncompressed codec: receivers see z exactly and the whole block crosses
// the link at the model's wire precision (ModelConfig::bytes_per_element).
#include <cstdint>
#include <string>

#include "runtime/compress/kv_codec.h"

namespace lowband::compress {

class IdentityCodec final : public KvCodec {
 public:
  IdentityCodec(int kv_heads, int head_dim, int bytes_per_element);
  std::string describe() const override;
  // The message is z itself, n · kv_heads · head_dim · bytes_per_element wire bytes;
  // the gradient message dz_hat, the same size. decode_gradient: dz += summed.
  void encode(const KvBlockId& id, int64_t n, const float* z, CodecMessage& out) override;
  void decode(const KvBlockId& id, int64_t n, const CodecMessage& in, float* z_hat) override;
  void encode_gradient(const KvBlockId& id, int64_t n, const float* dz_hat, CodecGradient& out) override;
  void decode_gradient(const KvBlockId& id, int64_t n, const CodecGradient& summed, float* dz) override;
  MessageLayout message_layout(KvTensor, int64_t n) const override { return {count(n), 0, 0}; }
  int64_t gradient_floats(KvTensor, int64_t n) const override { return count(n); }

  double message_bytes(KvTensor, int64_t n) const override;
  double gradient_message_bytes(KvTensor t, int64_t n) const override { return message_bytes(t, n); }

 private:
  int64_t count(int64_t n) const { return n * kv_heads_ * head_dim_; }
  int kv_heads_, head_dim_, bytes_per_element_;
};

}  // namespace lowband::compress
