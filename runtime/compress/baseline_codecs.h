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
// Values keep float32 in memory: bytes_per_element only sizes the message, as
// for the identity codec. TopkCodec keeps each block's indices until the next
// begin_step; neither is thread-safe. Both report reconstruction_errors from
// step 0 (they have no warm-up).
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/compress/kv_codec.h"

namespace lowband::compress {

// Per (layer, tensor) sums of ‖Z − Ẑ‖²_F and ‖Z‖²_F since clear(), grown to the
// deepest layer seen (the baselines are not told the model's depth).
class ErrorSums {
 public:
  void clear() { err_sq_.clear(), norm_sq_.clear(); }
  void add(const KvBlockId& id, int64_t count, const float* z, const float* z_hat);
  std::vector<double> relative(KvTensor t) const;  // per layer; 0 where ‖Z‖ = 0

 private:
  std::vector<double> err_sq_, norm_sq_;  // [layer * 2 + tensor]
};

class TopkCodec final : public KvCodec {
 public:
  // InputError("compression.topk_fraction") unless 0 < fraction <= 1.
  TopkCodec(int kv_heads, int head_dim, int bytes_per_element, double fraction);
  std::string describe() const override;
  void begin_step(int step) override;
  double forward(const KvBlockId& id, int64_t n, const float* z, float* z_hat) override;
  double backward(const KvBlockId& id, int64_t n, const float* dz_hat, float* dz) override;

  int64_t kept(int64_t n) const;  // k for a block of n rows
  double message_bytes(KvTensor, int64_t n) const override { return kept(n) * (bytes_per_element_ + 4.0); }
  double gradient_message_bytes(KvTensor, int64_t n) const override { return kept(n) * double(bytes_per_element_); }
  std::vector<double> reconstruction_errors(KvTensor t) const override { return errors_.relative(t); }

 private:
  using BlockKey = std::tuple<int, int, int, int, int>;
  int kv_heads_, head_dim_, bytes_per_element_;
  double fraction_;
  std::map<BlockKey, std::vector<int32_t>> indices_;
  ErrorSums errors_;
};

class QuantizeCodec final : public KvCodec {
 public:
  // InputError("compression.bits") unless bits is 4 or 8; ("compression.block") unless block >= 1.
  QuantizeCodec(int kv_heads, int head_dim, int bytes_per_element, int bits, int block);
  std::string describe() const override;
  void begin_step(int) override { errors_.clear(); }
  double forward(const KvBlockId& id, int64_t n, const float* z, float* z_hat) override;
  double backward(const KvBlockId& id, int64_t n, const float* dz_hat, float* dz) override;

  double message_bytes(KvTensor, int64_t n) const override;
  double gradient_message_bytes(KvTensor, int64_t n) const override { return double(count(n)) * bytes_per_element_; }
  std::vector<double> reconstruction_errors(KvTensor t) const override { return errors_.relative(t); }

 private:
  int64_t count(int64_t n) const { return n * kv_heads_ * head_dim_; }
  int kv_heads_, head_dim_, bytes_per_element_, bits_, block_;
  ErrorSums errors_;
};

}  // namespace lowband::compress
