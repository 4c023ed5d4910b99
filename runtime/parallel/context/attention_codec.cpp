// ContextAttention's side of the K/V codec (context/attention.h): its blocks into
// one message per layer, the blocks it receives back into K̂/V̂, the dK/dV
// messages, the codec's collectives (parameter gradients, warm-up Gram sums,
// error sums) and its checkpointed state.
#include <istream>
#include <ostream>

#include "common/binary_io.h"
#include "kernels/adamw.h"
#include "runtime/compress/error_sums.h"
#include "runtime/parallel/context/attention.h"
#include "runtime/parallel/context/kv_messages.h"

namespace lowband::parallel {

using compress::KvTensor;

// Calls f(block index, id, n, offset of the block's first K/V value) for every
// block of `owner` in message order: sequence-major, then chunk, K before V.
template <class F>
void ContextAttention::for_each_block(int l, int owner, F f) const {
  const auto& ranges = ranges_[size_t(owner)];
  size_t b = 0;
  for (int s = 0; s < slot_->sequences; ++s)
    for (size_t i = 0; i < ranges.size(); ++i) {
      const int64_t n = ranges[i].second - ranges[i].first;
      const int64_t off = (s * local_tokens_[size_t(owner)] + chunk_row_[size_t(owner)][i]) * kv_row_;
      for (KvTensor t : {KvTensor::k, KvTensor::v}) f(b++, block_id(l, t, owner, int(i), s), n, off);
    }
}

size_t ContextAttention::block_count(int owner) const {
  return size_t(slot_->sequences) * ranges_[size_t(owner)].size() * 2;
}

void ContextAttention::encode_blocks(int l, std::vector<uint8_t>& message) {
  const auto& a = model_.activations(l);
  begin_kv_message(message);
  compress::CodecMessage block;
  for_each_block(l, rank_, [&](size_t, const compress::KvBlockId& id, int64_t n, int64_t off) {
    const float* z = kernels::host_view(k_, (id.tensor == KvTensor::k ? a.k : a.v) + off, size_t(n * kv_row_), host_a_);
    codec_->encode(id, n, z, block);
    append_block(message, block);
  });
}

void ContextAttention::decode_blocks(int l, int owner, const std::vector<uint8_t>& message) {
  const std::vector<compress::CodecMessage> blocks = kv_message_blocks(message);
  if (blocks.size() != block_count(owner))
    throw std::logic_error("K/V message of rank " + std::to_string(owner) + ": " + std::to_string(blocks.size()) +
                           " blocks");
  for_each_block(l, owner, [&](size_t b, const compress::KvBlockId& id, int64_t n, int64_t off) {
    auto& hat = id.tensor == KvTensor::k ? slot_->k_hat : slot_->v_hat;
    float* z_hat = hat[layer_index(l)][size_t(owner)].data() + off;
    if (kernels::host_addressable(k_)) return codec_->decode(id, n, blocks[b], z_hat);
    host_b_.resize(size_t(n * kv_row_));
    codec_->decode(id, n, blocks[b], host_b_.data());
    k_.upload(z_hat, host_b_.data(), host_b_.size() * sizeof(float));
  });
}

void ContextAttention::encode_gradients(int l, int owner, const float* dk, const float* dv,
                                        std::vector<compress::CodecGradient>& out) {
  out.assign(block_count(owner), {});
  for_each_block(l, owner, [&](size_t b, const compress::KvBlockId& id, int64_t n, int64_t off) {
    const float* dz_hat = kernels::host_view(k_, (id.tensor == KvTensor::k ? dk : dv) + off, size_t(n * kv_row_), host_a_);
    codec_->encode_gradient(id, n, dz_hat, out[b]);
  });
}

void ContextAttention::decode_gradients(int l, const std::vector<compress::CodecGradient>& summed) {
  if (summed.size() != block_count(rank_))
    throw std::logic_error("dK/dV message for rank " + std::to_string(rank_) + ": " +
                           std::to_string(summed.size()) + " blocks");
  for_each_block(l, rank_, [&](size_t b, const compress::KvBlockId& id, int64_t n, int64_t off) {
    float* dz = (id.tensor == KvTensor::k ? model_.dk() : model_.dv()) + off;
    if (kernels::host_addressable(k_)) return codec_->decode_gradient(id, n, summed[b], dz);
    host_b_.resize(size_t(n * kv_row_));  // the codec adds into dz
    k_.download(host_b_.data(), dz, host_b_.size() * sizeof(float));
    codec_->decode_gradient(id, n, summed[b], host_b_.data());
    k_.upload(dz, host_b_.data(), host_b_.size() * sizeof(float));
  });
}

// A transport that delivers nothing (comm::NullCommunicator: a dry run, where no
// rank has values) leaves the receiver to state what arrived: `owner`'s blocks
// as its own codec, dry too, sizes them, with no values.
void ContextAttention::receive_blocks(comm::Communicator& comm, int src, int l, int owner,
                                      std::vector<uint8_t>& message) {
  comm.recv_message(src, tag_kv(l), message, "kv");
  if (!message.empty()) return;
  begin_kv_message(message);
  compress::CodecMessage block;
  for_each_block(l, owner, [&](size_t, const compress::KvBlockId& id, int64_t n, int64_t) {
    codec_->encode(id, n, nullptr, block);
    append_block(message, block);
  });
}

void ContextAttention::receive_gradients(comm::Communicator& comm, int src, int l, int owner,
                                         std::vector<compress::CodecGradient>& blocks) {
  comm.recv_message(src, tag_dkv(l), received_, "dkv");
  if (!received_.empty()) return unpack_gradients(received_, blocks);
  blocks.assign(block_count(owner), {});
  for_each_block(l, owner, [&](size_t b, const compress::KvBlockId& id, int64_t n, int64_t) {
    codec_->encode_gradient(id, n, nullptr, blocks[b]);
  });
}

void ContextAttention::begin_codec_step(comm::Communicator& comm, int step) {
  // After the last warm-up step every rank holds the Gram sums of its own
  // blocks: the fit in begin_step needs them summed over all ranks.
  const compress::GramSums g = codec_->gram_sums();
  if (g.grams && context_ranks_ > 1) {
    comm.all_reduce_sum(g.grams, g.gram_count, "codec_fit");
    comm.all_reduce_sum(g.rows, g.row_count, "codec_fit");
  }
  codec_->begin_step(step);
}

void ContextAttention::append_error_sums(std::vector<double>& message) {
  compress::ErrorSums* e = codec_->error_sums();
  if (!e || context_ranks_ < 2) return;
  message.insert(message.end(), e->data(), e->data() + e->size());
}

void ContextAttention::take_error_sums(const double* summed) {
  compress::ErrorSums* e = codec_->error_sums();
  if (!e || context_ranks_ < 2) return;
  std::copy(summed, summed + e->size(), e->data());
}

void ContextAttention::reconstruction_errors(std::vector<double>& k, std::vector<double>& v) const {
  if (!codec_->error_sums() || context_ranks_ < 2) return;
  k = codec_->reconstruction_errors(KvTensor::k);
  v = codec_->reconstruction_errors(KvTensor::v);
}

void ContextAttention::step_codec(comm::Communicator& comm, double lr) {
  if (codec_->param_count() <= 0) return;
  // Each rank holds the gradients of the blocks it owns: sum them (the heads are shared).
  comm.all_reduce_sum(codec_->grads(), codec_->param_count(), "codec_grad");
  if (k_.device == kernels::Device::dry) return;  // a dry run's values mean nothing: no moments kept
  if (codec_m_.size() != size_t(codec_->param_count()))  // e.g. created after the warm-up
    codec_m_.assign(size_t(codec_->param_count()), 0.0f), codec_v_ = codec_m_, codec_steps_ = 0;
  kernels::AdamWConfig c;
  c.lr = float(lr);
  kernels::cpu::adamw_step(codec_->params(), codec_->grads(), codec_m_.data(), codec_v_.data(),
                           codec_->param_count(), ++codec_steps_, c);
}

void ContextAttention::save_codec_state(std::ostream& out) const {
  codec_->save_state(out);
  binary::write_vector(out, codec_m_);
  binary::write_vector(out, codec_v_);
  binary::write_i64(out, codec_steps_);
}

void ContextAttention::load_codec_state(std::istream& in) {
  codec_->load_state(in);
  std::vector<float> m = binary::read_vector<float>(in, "the codec's first moments");
  std::vector<float> v = binary::read_vector<float>(in, "the codec's second moments");
  const int64_t steps = binary::read_i64(in, "the codec's step count");
  // Empty before the codec has parameters; else one moment per parameter.
  if (m.size() != v.size() || (!m.empty() && m.size() != size_t(codec_->param_count())))
    throw binary::BinaryFormatError("codec moments of " + std::to_string(m.size()) + " values for " +
                                    std::to_string(codec_->param_count()) + " parameters");
  codec_m_ = std::move(m), codec_v_ = std::move(v), codec_steps_ = steps;
}

}  // namespace lowband::parallel
