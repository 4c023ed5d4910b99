#include "runtime/compress/kv_codec.h"

namespace lowband::compress {

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
