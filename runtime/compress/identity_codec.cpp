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

double IdentityCodec::block_bytes(int64_t n) const {
  return static_cast<double>(n) * kv_heads_ * head_dim_ * bytes_per_element_;
}

double IdentityCodec::forward(const KvBlockId&, int64_t n, const float* z, float* z_hat) {
  std::copy(z, z + n * kv_heads_ * head_dim_, z_hat);
  return block_bytes(n);
}

double IdentityCodec::backward(const KvBlockId&, int64_t n, const float* dz_hat, float* dz) {
  const int64_t count = n * kv_heads_ * head_dim_;
  for (int64_t i = 0; i < count; ++i) dz[i] += dz_hat[i];
  return block_bytes(n);
}

}  // namespace lowband::compress
