#pragma once
// The K/V baselines the MoS paper compares with (docs/design.md §4), over the whole
// (n, kv_heads, head_dim) block as one flat array of count = n·kv_heads·head_dim.
//
// TopkCodec: keeps k = max(1, round(fraction·count)) entries of largest |z|
// (kernels::cpu::topk_compress). Message: k values at the model's wire precision
// plus k int32 indices = k·(bytes_per_element + 4). Backward: the exact gradient
// of z ↦ mask ⊙ z with the mask held fixed, i.e. straight-through restricted to
// the kept entries (dropped entries get no gradient, since receivers never saw
// them); the gradient message is the k kept gradients, k·bytes_per_element (the
// owner knows the indices it sent).
//
// QuantizeCodec: symmetric absmax quantisation to 4 or 8 bits in blocks of
// `block` consecutive values (kernels::cpu::quantize_blockwise). Message: packed
// codes plus one float32 scale per block (kernels::quantized_message_bytes).
// Backward: straight-through, dz += dz_hat; that gradient is not quantised, so
// its message is uncompressed, count·bytes_per_element.
//
// Split across ranks (kv_codec.h): top-k's message is the k values and indices;
// the receiver keeps the indices from it to pick its gradient's k entries, the
// owner keeps its own to scatter the summed ones. Quantize's message is the codes
// (CodecMessage::codes) and the float32 scales (values); its gradient the full dz_hat.
// Values keep float32 in memory: bytes_per_element only sizes the message, as
// for the identity codec. Both halves of TopkCodec keep each block's indices
// until the next begin_step; neither codec is thread-safe. Both report
// reconstruction_errors from step 0 (they have no warm-up), summed by owners.
// `layers` (0: grow to the deepest layer seen) fixes error_sums()'s size.
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/compress/error_sums.h"
#include "runtime/compress/kv_codec.h"

namespace lowband::compress {

class TopkCodec final : public KvCodec {
 public:
  // InputError("compression.topk_fraction") unless 0 < fraction <= 1.
  TopkCodec(int kv_heads, int head_dim, int bytes_per_element, double fraction, int layers = 0);
  std::string describe() const override;
  void begin_step(int step) override;
  void encode(const KvBlockId& id, int64_t n, const float* z, CodecMessage& out) override;
  void decode(const KvBlockId& id, int64_t n, const CodecMessage& in, float* z_hat) override;
  void encode_gradient(const KvBlockId& id, int64_t n, const float* dz_hat, CodecGradient& out) override;
  void decode_gradient(const KvBlockId& id, int64_t n, const CodecGradient& summed, float* dz) override;
  MessageLayout message_layout(KvTensor, int64_t n) const override { return {kept(n), kept(n), 0}; }
  int64_t gradient_floats(KvTensor, int64_t n) const override { return kept(n); }

  int64_t kept(int64_t n) const;  // k for a block of n rows
  double message_bytes(KvTensor, int64_t n) const override { return kept(n) * (bytes_per_element_ + 4.0); }
  double gradient_message_bytes(KvTensor, int64_t n) const override { return kept(n) * double(bytes_per_element_); }
  std::vector<double> reconstruction_errors(KvTensor t) const override { return errors_.relative(t); }
  ErrorSums* error_sums() override { return &errors_; }

 private:
  using BlockKey = std::tuple<int, int, int, int, int>;
  using Indices = std::map<BlockKey, std::vector<int32_t>>;
  const std::vector<int32_t>& kept_indices(const Indices& from, const KvBlockId& id, int64_t n,
                                           const char* where) const;
  int kv_heads_, head_dim_, bytes_per_element_;
  double fraction_;
  Indices sent_, received_;  // per block: the owner's and the receiver's copy
  ErrorSums errors_;
};

class QuantizeCodec final : public KvCodec {
 public:
  // InputError("compression.bits") unless bits is 4 or 8; ("compression.block") unless block >= 1.
  QuantizeCodec(int kv_heads, int head_dim, int bytes_per_element, int bits, int block, int layers = 0);
  std::string describe() const override;
  void begin_step(int) override { errors_.clear(); }
  void encode(const KvBlockId& id, int64_t n, const float* z, CodecMessage& out) override;
  void decode(const KvBlockId& id, int64_t n, const CodecMessage& in, float* z_hat) override;
  void encode_gradient(const KvBlockId& id, int64_t n, const float* dz_hat, CodecGradient& out) override;
  void decode_gradient(const KvBlockId& id, int64_t n, const CodecGradient& summed, float* dz) override;
  MessageLayout message_layout(KvTensor, int64_t n) const override;
  int64_t gradient_floats(KvTensor, int64_t n) const override { return count(n); }

  double message_bytes(KvTensor, int64_t n) const override;
  double gradient_message_bytes(KvTensor, int64_t n) const override { return double(count(n)) * bytes_per_element_; }
  std::vector<double> reconstruction_errors(KvTensor t) const override { return errors_.relative(t); }
  ErrorSums* error_sums() override { return &errors_; }

 private:
  int64_t count(int64_t n) const { return n * kv_heads_ * head_dim_; }
  int kv_heads_, head_dim_, bytes_per_element_, bits_, block_;
  ErrorSums errors_;
};

}  // namespace lowband::compress
