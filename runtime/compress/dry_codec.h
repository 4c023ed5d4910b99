#pragma once
// A K/V codec's dry mode (shapes only: a dry run of the rank programs,
// runtime/parallel/dry_run.h): it wraps the scenario's real codec for what does
// not depend on values (its description, its message sizes and phase, its
// parameter count, the size of its error sums) and skips the arithmetic:
// encode and encode_gradient give messages of no values that carry the modelled
// wire bytes the real codec would report this step (compressing_at: compressed,
// or the uncompressed block in a warm-up); decode and decode_gradient do nothing.
// The pointers it is handed are never read.
//
// Left out: the MoS warm-up statistics (gram_sums: none), so a dry step has no
// "codec_fit" all-reduce (once per run, at the end of the warm-up), and no fit.
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/compress/identity_codec.h"
#include "runtime/compress/kv_codec.h"
#include "runtime/scenario/scenario.h"

namespace lowband::compress {

class DryKvCodec final : public KvCodec {
 public:
  // real: the codec whose sizes it takes; plain: the uncompressed messages' sizes.
  DryKvCodec(std::unique_ptr<KvCodec> real, const IdentityCodec& plain);

  std::string describe() const override { return real_->describe(); }
  void begin_step(int step) override { compressing_ = real_->compressing_at(step); }
  void encode(const KvBlockId& id, int64_t n, const float* z, CodecMessage& out) override;
  void decode(const KvBlockId&, int64_t, const CodecMessage&, float*) override {}
  void encode_gradient(const KvBlockId& id, int64_t n, const float* dz_hat, CodecGradient& out) override;
  void decode_gradient(const KvBlockId&, int64_t, const CodecGradient&, float*) override {}
  MessageLayout message_layout(KvTensor, int64_t) const override { return {}; }
  int64_t gradient_floats(KvTensor, int64_t) const override { return 0; }
  double message_bytes(KvTensor t, int64_t n) const override { return real_->message_bytes(t, n); }
  double gradient_message_bytes(KvTensor t, int64_t n) const override { return real_->gradient_message_bytes(t, n); }
  bool compressing_at(int step) const override { return real_->compressing_at(step); }
  ErrorSums* error_sums() override { return real_->error_sums(); }
  int64_t param_count() const override { return real_->param_count(); }
  float* params() override { return real_->params(); }
  float* grads() override { return real_->grads(); }

 private:
  std::unique_ptr<KvCodec> real_;
  IdentityCodec plain_;
  bool compressing_ = true;
};

// make_kv_codec(scenario) in its dry mode.
std::unique_ptr<KvCodec> make_dry_kv_codec(const Scenario& scenario);

}  // namespace lowband::compress
