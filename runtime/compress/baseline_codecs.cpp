#include "runtime/compress/baseline_codecs.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/error.h"
#include "kernels/compress.h"

namespace lowband::compress {
namespace {

void check_shape(int kv_heads, int head_dim, int bytes_per_element) {
  if (kv_heads < 1) throw InputError("model.kv_heads", "must be at least 1");
  if (head_dim < 1) throw InputError("model.d_model", "head_dim must be at least 1");
  if (bytes_per_element < 1) throw InputError("model.bytes_per_element", "must be at least 1");
}

}  // namespace

void ErrorSums::add(const KvBlockId& id, int64_t count, const float* z, const float* z_hat) {
  const size_t i = size_t(id.layer) * 2 + size_t(id.tensor);
  if (err_sq_.size() <= i) err_sq_.resize(size_t(id.layer + 1) * 2, 0.0), norm_sq_.resize(err_sq_.size(), 0.0);
  double err_sq = 0, norm_sq = 0;
  for (int64_t j = 0; j < count; ++j) {
    const double e = double(z[j]) - double(z_hat[j]);
    err_sq += e * e;
    norm_sq += double(z[j]) * double(z[j]);
  }
  err_sq_[i] += err_sq;
  norm_sq_[i] += norm_sq;
}

std::vector<double> ErrorSums::relative(KvTensor t) const {
  std::vector<double> out(err_sq_.size() / 2, 0.0);
  for (size_t l = 0; l < out.size(); ++l) {
    const size_t i = l * 2 + size_t(t);
    if (norm_sq_[i] > 0) out[l] = std::sqrt(err_sq_[i] / norm_sq_[i]);
  }
  return out;
}

TopkCodec::TopkCodec(int kv_heads, int head_dim, int bytes_per_element, double fraction)
    : kv_heads_(kv_heads), head_dim_(head_dim), bytes_per_element_(bytes_per_element), fraction_(fraction) {
  check_shape(kv_heads, head_dim, bytes_per_element);
  if (!(fraction > 0 && fraction <= 1))
    throw InputError("compression.topk_fraction", "expected a number in (0, 1], got " + std::to_string(fraction));
}

std::string TopkCodec::describe() const {
  return "topk (keep " + std::to_string(fraction_) + " of each K/V block's entries)";
}

void TopkCodec::begin_step(int) { indices_.clear(), errors_.clear(); }

int64_t TopkCodec::kept(int64_t n) const {
  const int64_t count = n * kv_heads_ * head_dim_;
  if (count == 0) return 0;
  return std::clamp<int64_t>(std::llround(fraction_ * double(count)), 1, count);
}

double TopkCodec::forward(const KvBlockId& id, int64_t n, const float* z, float* z_hat) {
  const int64_t count = n * kv_heads_ * head_dim_, k = kept(n);
  auto& idx = indices_[BlockKey{id.layer, int(id.tensor), id.owner, id.chunk, id.sequence}];
  idx.assign(k, 0);
  std::vector<float> values(k);
  if (k > 0) {
    kernels::cpu::topk_compress(count, k, z, values.data(), idx.data());
    kernels::cpu::topk_decompress(count, k, values.data(), idx.data(), z_hat);
  }
  errors_.add(id, count, z, z_hat);
  return message_bytes(id.tensor, n);
}

double TopkCodec::backward(const KvBlockId& id, int64_t n, const float* dz_hat, float* dz) {
  const auto it = indices_.find(BlockKey{id.layer, int(id.tensor), id.owner, id.chunk, id.sequence});
  if (it == indices_.end() || int64_t(it->second.size()) != kept(n))
    throw std::logic_error("TopkCodec::backward: no forward of this block with " + std::to_string(n) +
                           " rows this step");
  for (int32_t i : it->second) dz[i] += dz_hat[i];
  return gradient_message_bytes(id.tensor, n);
}

QuantizeCodec::QuantizeCodec(int kv_heads, int head_dim, int bytes_per_element, int bits, int block)
    : kv_heads_(kv_heads), head_dim_(head_dim), bytes_per_element_(bytes_per_element), bits_(bits), block_(block) {
  check_shape(kv_heads, head_dim, bytes_per_element);
  if (bits != 4 && bits != 8) throw InputError("compression.bits", "expected 4 or 8, got " + std::to_string(bits));
  if (block < 1) throw InputError("compression.block", "expected an integer >= 1, got " + std::to_string(block));
}

std::string QuantizeCodec::describe() const {
  return "quantize (" + std::to_string(bits_) + "-bit absmax, blocks of " + std::to_string(block_) + ")";
}

double QuantizeCodec::message_bytes(KvTensor, int64_t n) const {
  return double(kernels::quantized_message_bytes(count(n), bits_, block_));
}

double QuantizeCodec::forward(const KvBlockId& id, int64_t n, const float* z, float* z_hat) {
  const int64_t c = count(n);
  std::vector<uint8_t> codes(kernels::quantized_code_bytes(c, bits_));
  std::vector<float> scales(kernels::quantized_scale_count(c, block_));
  if (c > 0) {
    kernels::cpu::quantize_blockwise(c, bits_, block_, z, codes.data(), scales.data());
    kernels::cpu::dequantize_blockwise(c, bits_, block_, codes.data(), scales.data(), z_hat);
  }
  errors_.add(id, c, z, z_hat);
  return message_bytes(id.tensor, n);
}

double QuantizeCodec::backward(const KvBlockId& id, int64_t n, const float* dz_hat, float* dz) {
  const int64_t c = count(n);
  for (int64_t i = 0; i < c; ++i) dz[i] += dz_hat[i];
  return gradient_message_bytes(id.tensor, n);
}

}  // namespace lowband::compress
