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
  // z_hat = z; returns n · kv_heads · head_dim · bytes_per_element.
  double forward(const KvBlockId& id, int64_t n, const float* z, float* z_hat) override;
  // dz += dz_hat; returns the same bytes as forward.
  double backward(const KvBlockId& id, int64_t n, const float* dz_hat, float* dz) override;

  double message_bytes(KvTensor, int64_t n) const override;
  double gradient_message_bytes(KvTensor t, int64_t n) const override { return message_bytes(t, n); }

 private:
  int kv_heads_, head_dim_, bytes_per_element_;
};

}  // namespace lowband::compress
