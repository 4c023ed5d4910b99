#include "runtime/compress/uncompressed_parts.h"

#include <utility>

#include "common/error.h"

namespace lowband::compress {

UncompressedPartsCodec::UncompressedPartsCodec(std::unique_ptr<KvCodec> real, const IdentityCodec& plain,
                                               int warmup_steps, int layers, bool compress_final_layer)
    : real_(std::move(real)), plain_(plain), warmup_steps_(warmup_steps), layers_(layers),
      compress_final_layer_(compress_final_layer), warm_(warmup_steps > 0) {
  if (warmup_steps < 0) throw InputError("compression.warmup_steps", "must be >= 0");
}

std::string UncompressedPartsCodec::describe() const {
  std::string s = real_->describe();
  if (warmup_steps_ > 0) s += ", after " + std::to_string(warmup_steps_) + " uncompressed warm-up steps";
  if (!compress_final_layer_) s += ", final layer uncompressed";
  return s;
}

void UncompressedPartsCodec::begin_step(int step) {
  warm_ = step < warmup_steps_;
  real_->begin_step(step);  // the wrapped codec clears its per-step state either way
}

KvCodec& UncompressedPartsCodec::of(const KvBlockId& id) {
  if (warm_ || !compresses_layer(id.layer)) return plain_;
  return *real_;
}

void UncompressedPartsCodec::encode(const KvBlockId& id, int64_t n, const float* z, CodecMessage& out) {
  of(id).encode(id, n, z, out);
}
void UncompressedPartsCodec::decode(const KvBlockId& id, int64_t n, const CodecMessage& in, float* z_hat) {
  of(id).decode(id, n, in, z_hat);
}
void UncompressedPartsCodec::encode_gradient(const KvBlockId& id, int64_t n, const float* dz_hat, CodecGradient& out) {
  of(id).encode_gradient(id, n, dz_hat, out);
}
void UncompressedPartsCodec::decode_gradient(const KvBlockId& id, int64_t n, const CodecGradient& summed, float* dz) {
  of(id).decode_gradient(id, n, summed, dz);
}

MessageLayout UncompressedPartsCodec::message_layout(KvTensor t, int64_t n) const {
  return warm_ ? plain_.message_layout(t, n) : real_->message_layout(t, n);
}
int64_t UncompressedPartsCodec::gradient_floats(KvTensor t, int64_t n) const {
  return warm_ ? plain_.gradient_floats(t, n) : real_->gradient_floats(t, n);
}

}  // namespace lowband::compress
