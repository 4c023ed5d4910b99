#pragma once
// The codecs' dry modes. A K/V codec's (shapes only: a dry run of the rank programs,
// runtime/parallel/dry_steps.h): it wraps the scenario's real codec for what does
// not depend on values (its description, its message sizes and phase, its
// parameter count, the size of its error sums) and skips the arithmetic:
// encode and encode_gradient give messages of no values that carry the modelled
// wire bytes the real codec would report this step (compressing_at and
// compresses_layer: compressed, or the uncompressed block in a warm-up and in a
// layer it leaves uncompressed); decode and decode_gradient do nothing.
// The pointers it is handed are never read.
//
// Left out: the MoS warm-up statistics (gram_sums: none), so a dry step has no
// "codec_fit" all-reduce (once per run, at the end of the warm-up), and no fit.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "kernels/backend.h"
#include "runtime/compress/boundary_codec.h"
#include "runtime/compress/identity_codec.h"
#include "runtime/compress/kv_codec.h"
#include "runtime/scenario/scenario.h"

namespace lowband::compress {

class DryKvCodec final : public KvCodec {
 public:
  // real: the codec whose sizes it takes (several dry codecs may share one: it
  // answers for sizes alone); plain: the uncompressed messages' sizes.
  DryKvCodec(std::shared_ptr<KvCodec> real, const IdentityCodec& plain);

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
  bool compresses_layer(int layer) const override { return real_->compresses_layer(layer); }
  ErrorSums* error_sums() override { return real_->error_sums(); }
  int64_t param_count() const override { return real_->param_count(); }
  float* params() override { return real_->params(); }
  float* grads() override { return real_->grads(); }

 private:
  std::shared_ptr<KvCodec> real_;
  IdentityCodec plain_;
  bool compressing_ = true;
};

// A pipeline boundary codec's dry mode, alike: messages of no values that carry
// the real codec's modelled bytes; nothing decoded.
class DryBoundaryCodec final : public BoundaryCodec {
 public:
  explicit DryBoundaryCodec(std::unique_ptr<BoundaryCodec> real) : real_(std::move(real)) {}
  std::string describe() const override { return real_->describe(); }
  void encode(int64_t n, const float*, const int32_t*, CodecMessage& out) const override;
  void decode(int64_t, const CodecMessage&, float*) const override {}
  void encode_gradient(int64_t n, const float*, const CodecMessage&, CodecGradient& out) const override;
  void decode_gradient(int64_t, const CodecGradient&, const CodecMessage&, float*) const override {}
  double message_bytes(int64_t n) const override { return real_->message_bytes(n); }
  double gradient_bytes(int64_t n) const override { return real_->gradient_bytes(n); }
  MessageLayout message_layout(int64_t) const override { return {}; }
  int64_t gradient_floats(int64_t) const override { return 0; }
  bool centres_on_embedding() const override { return real_->centres_on_embedding(); }
  void set_embedding_table(std::vector<float>) override {}  // a dry rank holds no values

 private:
  std::unique_ptr<BoundaryCodec> real_;
};

// make_kv_codec(scenario) and make_boundary_codec(scenario) for ranks on
// `device`: their dry modes on kernels::Device::dry.
std::unique_ptr<KvCodec> make_kv_codec_on(const Scenario& scenario, kernels::Device device);
// The dry K/V codec of one of the ranks that run `scenario`: `real` (made on the
// first call) is shared by them all, so that P dry ranks hold one real codec's
// parameters, not P.
std::unique_ptr<KvCodec> make_dry_kv_codec(const Scenario& scenario, std::shared_ptr<KvCodec>& real);
std::unique_ptr<BoundaryCodec> make_boundary_codec_on(const Scenario& scenario, kernels::Device device);

}  // namespace lowband::compress
