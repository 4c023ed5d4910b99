#pragma once
// The parts of a run a baseline codec (topk, quantize, drop) leaves uncompressed,
// as MoS does its own: the first compression.warmup_steps steps (an uncompressed
// warm-up, so that a comparison with MoS gives every codec the same one) and, with
// compression.compress_final_layer false, the final layer's blocks for the whole
// run. There the exact block and gradient cross, as the identity codec sends them;
// everywhere else the wrapped codec.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/compress/identity_codec.h"
#include "runtime/compress/kv_codec.h"

namespace lowband::compress {

class UncompressedPartsCodec final : public KvCodec {
 public:
  // layers: the model's; the final one (layers − 1) is plain unless compress_final_layer.
  UncompressedPartsCodec(std::unique_ptr<KvCodec> real, const IdentityCodec& plain, int warmup_steps, int layers,
                         bool compress_final_layer);

  std::string describe() const override;
  void begin_step(int step) override;
  void encode(const KvBlockId& id, int64_t n, const float* z, CodecMessage& out) override;
  void decode(const KvBlockId& id, int64_t n, const CodecMessage& in, float* z_hat) override;
  void encode_gradient(const KvBlockId& id, int64_t n, const float* dz_hat, CodecGradient& out) override;
  void decode_gradient(const KvBlockId& id, int64_t n, const CodecGradient& summed, float* dz) override;
  // Only the codecs' own checks ask (per block they ask through `of`): the step's phase.
  MessageLayout message_layout(KvTensor t, int64_t n) const override;
  int64_t gradient_floats(KvTensor t, int64_t n) const override;

  double message_bytes(KvTensor t, int64_t n) const override { return real_->message_bytes(t, n); }
  double gradient_message_bytes(KvTensor t, int64_t n) const override { return real_->gradient_message_bytes(t, n); }
  bool compressing_at(int step) const override { return step >= warmup_steps_ && real_->compressing_at(step); }
  bool compresses_layer(int layer) const override { return compress_final_layer_ || layer + 1 < layers_; }
  // The wrapped codec's figures: none in the warm-up (it saw no block), 0 for a
  // layer left uncompressed; the sums keep one size all run (dry steps agree).
  std::vector<double> reconstruction_errors(KvTensor t) const override { return real_->reconstruction_errors(t); }
  ErrorSums* error_sums() override { return real_->error_sums(); }

  int64_t param_count() const override { return real_->param_count(); }
  float* params() override { return real_->params(); }
  float* grads() override { return real_->grads(); }
  void zero_grads() override { real_->zero_grads(); }
  void save_state(std::ostream& out) const override { real_->save_state(out); }
  void load_state(std::istream& in) override { real_->load_state(in); }

 private:
  KvCodec& of(const KvBlockId& id);  // the codec that carries this block this step
  std::unique_ptr<KvCodec> real_;
  IdentityCodec plain_;
  int warmup_steps_, layers_;
  bool compress_final_layer_;
  bool warm_;  // in the warm-up (before the first begin_step: step 0's phase)
};

}  // namespace lowband::compress
