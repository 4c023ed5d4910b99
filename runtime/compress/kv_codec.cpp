#include "runtime/compress/kv_codec.h"

#include "common/error.h"

namespace lowband::compress {

void check_kv_shape(int kv_heads, int head_dim, int bytes_per_element) {
  if (kv_heads < 1) throw InputError("model.kv_heads", "must be at least 1");
  if (head_dim < 1) throw InputError("model.d_model", "head_dim must be at least 1");
  if (bytes_per_element < 1) throw InputError("model.bytes_per_element", "must be at least 1");
}

double KvCodec::forward(const KvBlockId& id, int64_t n, const float* z, float* z_hat) {
  CodecMessage m;
  encode(id, n, z, m);
  decode(id, n, m, z_hat);
  return m.wire_bytes;
}

double KvCodec::backward(const KvBlockId& id, int64_t n, const float* dz_hat, float* dz) {
  CodecGradient g;
  encode_gradient(id, n, dz_hat, g);
  decode_gradient(id, n, g, dz);
  return g.wire_bytes;
}

}  // namespace lowband::compress
