#include "runtime/compress/identity_codec.h"

#include <algorithm>

#include "common/error.h"

namespace lowband::compress {

IdentityCodec::IdentityCodec(int kv_heads, int head_dim, int bytes_per_element)
    : kv_heads_(kv_heads), head_dim_(head_dim), bytes_per_element_(bytes_per_element) {
  if (kv_heads <= 0) throw InputError("model.kv_heads", "must be positive");
  if (head_dim <= 0) throw InputError("model.d_model", "head_dim must be positive");
  if (bytes_per_element <= 0) throw InputError("model.bytes_per_element", "must be positive");
}

std::string IdentityCodec::describe() const { return "none (uncompressed K/V)"; }

double IdentityCodec::message_bytes(KvTensor, int64_t n) const {
  return static_cast<double>(n) * kv_heads_ * head_dim_ * bytes_per_element_;
}

double IdentityCodec::forward(const KvBlockId& id, int64_t n, const float* z, float* z_hat) {
  std::copy(z, z + n * kv_heads_ * head_dim_, z_hat);
  return message_bytes(id.tensor, n);
}

double IdentityCodec::backward(const KvBlockId& id, int64_t n, const float* dz_hat, float* dz) {
  const int64_t count = n * kv_heads_ * head_dim_;
  for (int64_t i = 0; i < count; ++i) dz[i] += dz_hat[i];
  return gradient_message_bytes(id.tensor, n);
}

}  // namespace lowband::compress
