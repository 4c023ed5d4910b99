#include "runtime/compress/baseline_codecs.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/error.h"
#include "kernels/compress.h"

namespace lowband::compress {
TopkCodec::TopkCodec(int kv_heads, int head_dim, int bytes_per_element, double fraction, int layers)
    : kv_heads_(kv_heads), head_dim_(head_dim), bytes_per_element_(bytes_per_element), fraction_(fraction),
      errors_(layers) {
  check_kv_shape(kv_heads, head_dim, bytes_per_element);
  if (!(fraction > 0 && fraction <= 1))
    throw InputError("compression.topk_fraction", "expected a number in (0, 1], got " + std::to_string(fraction));
}

std::string TopkCodec::describe() const {
  return "topk (keep " + std::to_string(fraction_) + " of each K/V block's entries)";
}

void TopkCodec::begin_step(int) { sent_.clear(), received_.clear(), errors_.clear(); }

int64_t TopkCodec::kept(int64_t n) const {
  const int64_t count = n * kv_heads_ * head_dim_;
  if (count == 0) return 0;
  return std::clamp<int64_t>(std::llround(fraction_ * double(count)), 1, count);
}

const std::vector<int32_t>& TopkCodec::kept_indices(const Indices& from, const KvBlockId& id, int64_t n,
                                                     const char* where) const {
  const auto it = from.find(BlockKey{id.layer, int(id.tensor), id.owner, id.chunk, id.sequence});
  if (it == from.end() || int64_t(it->second.size()) != kept(n))
    throw std::logic_error(std::string(where) + ": no message of this block with " + std::to_string(n) +
                           " rows this step");
  return it->second;
}

void TopkCodec::encode(const KvBlockId& id, int64_t n, const float* z, CodecMessage& out) {
  const int64_t count = n * kv_heads_ * head_dim_, k = kept(n);
  out.values.assign(k, 0.0f);
  out.indices.assign(k, 0);
  out.codes.clear();
  std::vector<float> z_hat(count, 0.0f);  // what receivers will see, for the error figure
  if (k > 0) {
    kernels::cpu::topk_compress(count, k, z, out.values.data(), out.indices.data());
    kernels::cpu::topk_decompress(count, k, out.values.data(), out.indices.data(), z_hat.data());
  }
  sent_[BlockKey{id.layer, int(id.tensor), id.owner, id.chunk, id.sequence}] = out.indices;
  errors_.add(id, count, z, z_hat.data());
  out.wire_bytes = message_bytes(id.tensor, n);
}

void TopkCodec::decode(const KvBlockId& id, int64_t n, const CodecMessage& in, float* z_hat) {
  check_layout(in.layout(), message_layout(id.tensor, n), "TopkCodec::decode");
  const int64_t count = n * kv_heads_ * head_dim_, k = kept(n);
  for (int32_t i : in.indices)  // the message came from another process: never scatter outside the block
    if (i < 0 || i >= count)
      throw std::logic_error("TopkCodec::decode: index " + std::to_string(i) + " outside a block of " +
                             std::to_string(count));
  if (k > 0) kernels::cpu::topk_decompress(count, k, in.values.data(), in.indices.data(), z_hat);
  received_[BlockKey{id.layer, int(id.tensor), id.owner, id.chunk, id.sequence}] = in.indices;
}

void TopkCodec::encode_gradient(const KvBlockId& id, int64_t n, const float* dz_hat, CodecGradient& out) {
  const auto& idx = kept_indices(received_, id, n, "TopkCodec::encode_gradient");
  out.values.resize(idx.size());
  for (size_t j = 0; j < idx.size(); ++j) out.values[j] = dz_hat[idx[j]];
  out.wire_bytes = gradient_message_bytes(id.tensor, n);
}

void TopkCodec::decode_gradient(const KvBlockId& id, int64_t n, const CodecGradient& summed, float* dz) {
  const auto& idx = kept_indices(sent_, id, n, "TopkCodec::decode_gradient");
  check_gradient(summed, int64_t(idx.size()), "TopkCodec::decode_gradient");
  for (size_t j = 0; j < idx.size(); ++j) dz[idx[j]] += summed.values[j];
}

QuantizeCodec::QuantizeCodec(int kv_heads, int head_dim, int bytes_per_element, int bits, int block, int layers)
    : kv_heads_(kv_heads), head_dim_(head_dim), bytes_per_element_(bytes_per_element), bits_(bits), block_(block),
      errors_(layers) {
  check_kv_shape(kv_heads, head_dim, bytes_per_element);
  if (bits != 4 && bits != 8) throw InputError("compression.bits", "expected 4 or 8, got " + std::to_string(bits));
  if (block < 1) throw InputError("compression.block", "expected an integer >= 1, got " + std::to_string(block));
}

std::string QuantizeCodec::describe() const {
  return "quantize (" + std::to_string(bits_) + "-bit absmax, blocks of " + std::to_string(block_) + ")";
}

double QuantizeCodec::message_bytes(KvTensor, int64_t n) const {
  return double(kernels::quantized_message_bytes(count(n), bits_, block_));
}

MessageLayout QuantizeCodec::message_layout(KvTensor, int64_t n) const {
  const int64_t c = count(n);
  return {int64_t(kernels::quantized_scale_count(c, block_)), 0, int64_t(kernels::quantized_code_bytes(c, bits_))};
}

void QuantizeCodec::encode(const KvBlockId& id, int64_t n, const float* z, CodecMessage& out) {
  const int64_t c = count(n);
  const MessageLayout l = message_layout(id.tensor, n);
  out.values.assign(l.values, 0.0f);  // the scales
  out.indices.clear();
  out.codes.assign(l.codes, 0);
  std::vector<float> z_hat(c, 0.0f);  // what receivers will see, for the error figure
  if (c > 0) {
    kernels::cpu::quantize_blockwise(c, bits_, block_, z, out.codes.data(), out.values.data());
    kernels::cpu::dequantize_blockwise(c, bits_, block_, out.codes.data(), out.values.data(), z_hat.data());
  }
  errors_.add(id, c, z, z_hat.data());
  out.wire_bytes = message_bytes(id.tensor, n);
}

void QuantizeCodec::decode(const KvBlockId& id, int64_t n, const CodecMessage& in, float* z_hat) {
  check_layout(in.layout(), message_layout(id.tensor, n), "QuantizeCodec::decode");
  const int64_t c = count(n);
  if (c > 0) kernels::cpu::dequantize_blockwise(c, bits_, block_, in.codes.data(), in.values.data(), z_hat);
}

void QuantizeCodec::encode_gradient(const KvBlockId& id, int64_t n, const float* dz_hat, CodecGradient& out) {
  out.values.assign(dz_hat, dz_hat + count(n));  // straight-through: not quantised
  out.wire_bytes = gradient_message_bytes(id.tensor, n);
}

void QuantizeCodec::decode_gradient(const KvBlockId&, int64_t n, const CodecGradient& summed, float* dz) {
  check_gradient(summed, count(n), "QuantizeCodec::decode_gradient");
  for (size_t i = 0; i < summed.values.size(); ++i) dz[i] += summed.values[i];
}

}  // namespace lowband::compress
