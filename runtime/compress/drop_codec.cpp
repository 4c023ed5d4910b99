#include "runtime/compress/drop_codec.h"

#include <algorithm>


namespace lowband::compress {

DropCodec::DropCodec(int kv_heads, int head_dim) : kv_heads_(kv_heads), head_dim_(head_dim) {
  check_kv_shape(kv_heads, head_dim, /*bytes_per_element=*/1);  // sends nothing: no element size
}

void DropCodec::encode(const KvBlockId&, int64_t, const float*, CodecMessage& out) {
  out.values.clear(), out.indices.clear(), out.codes.clear();
  out.wire_bytes = 0;
}

void DropCodec::decode(const KvBlockId& id, int64_t n, const CodecMessage& in, float* z_hat) {
  check_layout(in.layout(), message_layout(id.tensor, n), "DropCodec::decode");
  std::fill(z_hat, z_hat + n * kv_heads_ * head_dim_, 0.0f);
}

void DropCodec::encode_gradient(const KvBlockId&, int64_t, const float*, CodecGradient& out) {
  out.values.clear();
  out.wire_bytes = 0;
}

void DropCodec::decode_gradient(const KvBlockId& id, int64_t n, const CodecGradient& summed, float*) {
  check_gradient(summed, gradient_floats(id.tensor, n), "DropCodec::decode_gradient");
}

}  // namespace lowband::compress
