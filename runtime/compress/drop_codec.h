#pragma once
// The floor of the K/V comparisons (compression.method "drop"): nothing crosses
// the link, receivers attend to zeros in place of every remote block, and no
// gradient goes back (the owner's K/V learn from its own queries only). Only an
// ablation: with it, an answer that only remote context carries is at chance,
// which is what a codec that "sends nothing useful" must score on the long-range
// task (analysis/long-range-kv.md). Zero keys still take softmax weight (a score
// of 0 each), so remote positions dilute attention as a constant, carrying nothing.
#include <cstdint>
#include <string>

#include "runtime/compress/kv_codec.h"

namespace lowband::compress {

class DropCodec final : public KvCodec {
 public:
  DropCodec(int kv_heads, int head_dim);
  std::string describe() const override { return "drop (nothing sent: receivers attend to zeros)"; }
  void encode(const KvBlockId& id, int64_t n, const float* z, CodecMessage& out) override;
  void decode(const KvBlockId& id, int64_t n, const CodecMessage& in, float* z_hat) override;
  void encode_gradient(const KvBlockId& id, int64_t n, const float* dz_hat, CodecGradient& out) override;
  void decode_gradient(const KvBlockId& id, int64_t n, const CodecGradient& summed, float* dz) override;
  MessageLayout message_layout(KvTensor, int64_t) const override { return {0, 0, 0}; }
  int64_t gradient_floats(KvTensor, int64_t) const override { return 0; }
  double message_bytes(KvTensor, int64_t) const override { return 0; }
  double gradient_message_bytes(KvTensor, int64_t) const override { return 0; }

 private:
  int kv_heads_, head_dim_;
};

}  // namespace lowband::compress
