// ContextRank's side of the K/V codec (context_rank.h): its blocks into one
// message per layer, the blocks it receives back into K̂/V̂, the dK/dV messages,
// and the codec's collectives (parameter gradients, warm-up Gram sums, error sums).
#include "runtime/compress/error_sums.h"
#include "runtime/parallel/context_rank.h"
#include "runtime/parallel/kv_messages.h"

namespace lowband::parallel {

using compress::KvTensor;


// Calls f(block index, id, n, offset of the block's first K/V value) for every
// block of `owner` in message order: sequence-major, then chunk, K before V.
template <class F>
void ContextRank::for_each_block(int l, int owner, F f) const {
  const auto& ranges = ranges_[size_t(owner)];
  size_t b = 0;
  for (int s = 0; s < sequences_; ++s)
    for (size_t i = 0; i < ranges.size(); ++i) {
      const int64_t n = ranges[i].second - ranges[i].first;
      const int64_t off = (s * local_tokens_[size_t(owner)] + chunk_row_[size_t(owner)][i]) * kv_row_;
      for (KvTensor t : {KvTensor::k, KvTensor::v}) f(b++, block_id(l, t, owner, int(i), s), n, off);
    }
}

size_t ContextRank::block_count(int owner) const { return size_t(sequences_) * ranges_[size_t(owner)].size() * 2; }

void ContextRank::encode_blocks(int l, std::vector<uint8_t>& message) {
  const auto& a = model_.activations(l);
  begin_kv_message(message);
  compress::CodecMessage block;
  for_each_block(l, rank_, [&](size_t, const compress::KvBlockId& id, int64_t n, int64_t off) {
    const float* z = kernels::host_view(k_, (id.tensor == KvTensor::k ? a.k : a.v) + off, size_t(n * kv_row_), host_a_);
    codec_->encode(id, n, z, block);
    append_block(message, block);
  });
}

void ContextRank::decode_blocks(int l, int owner, const std::vector<uint8_t>& message) {
  const std::vector<compress::CodecMessage> blocks = kv_message_blocks(message);
  if (blocks.size() != block_count(owner))
    throw std::logic_error("K/V message of rank " + std::to_string(owner) + ": " + std::to_string(blocks.size()) +
                           " blocks");
  for_each_block(l, owner, [&](size_t b, const compress::KvBlockId& id, int64_t n, int64_t off) {
    float* z_hat = (id.tensor == KvTensor::k ? k_hat_ : v_hat_)[size_t(l)][size_t(owner)].data() + off;
    if (k_.device == kernels::Device::cpu) return codec_->decode(id, n, blocks[b], z_hat);
    host_b_.resize(size_t(n * kv_row_));
    codec_->decode(id, n, blocks[b], host_b_.data());
    k_.upload(z_hat, host_b_.data(), host_b_.size() * sizeof(float));
  });
}

void ContextRank::encode_gradients(int l, int owner, const float* dk, const float* dv,
                                   std::vector<compress::CodecGradient>& out) {
  out.assign(block_count(owner), {});
  for_each_block(l, owner, [&](size_t b, const compress::KvBlockId& id, int64_t n, int64_t off) {
    const float* dz_hat = kernels::host_view(k_, (id.tensor == KvTensor::k ? dk : dv) + off, size_t(n * kv_row_), host_a_);
    codec_->encode_gradient(id, n, dz_hat, out[b]);
  });
}

void ContextRank::decode_gradients(int l, const std::vector<compress::CodecGradient>& summed) {
  if (summed.size() != block_count(rank_))
    throw std::logic_error("dK/dV message for rank " + std::to_string(rank_) + ": " +
                           std::to_string(summed.size()) + " blocks");
  for_each_block(l, rank_, [&](size_t b, const compress::KvBlockId& id, int64_t n, int64_t off) {
    float* dz = (id.tensor == KvTensor::k ? model_.dk() : model_.dv()) + off;
    if (k_.device == kernels::Device::cpu) return codec_->decode_gradient(id, n, summed[b], dz);
    host_b_.resize(size_t(n * kv_row_));  // the codec adds into dz
    k_.download(host_b_.data(), dz, host_b_.size() * sizeof(float));
    codec_->decode_gradient(id, n, summed[b], host_b_.data());
    k_.upload(dz, host_b_.data(), host_b_.size() * sizeof(float));
  });
}

void ContextRank::begin_codec_step(comm::Communicator& comm, int step) {
  // After the last warm-up step every rank holds the Gram sums of its own
  // blocks: the fit in begin_step needs them summed over all ranks.
  const compress::GramSums g = codec_->gram_sums();
  if (g.grams && P_ > 1) {
    comm.all_reduce_sum(g.grams, g.gram_count, "codec_fit");
    comm.all_reduce_sum(g.rows, g.row_count, "codec_fit");
  }
  codec_->begin_step(step);
}

void ContextRank::reconstruction_errors(comm::Communicator& comm, RankStepResult& out) {
  compress::ErrorSums* e = codec_->error_sums();
  if (!e || P_ < 2) return;
  comm.all_reduce_sum(e->data(), e->size(), comm::Wire("codec_error", -1, /*deferred=*/true));
  out.kv_reconstruction_error_k = codec_->reconstruction_errors(KvTensor::k);
  out.kv_reconstruction_error_v = codec_->reconstruction_errors(KvTensor::v);
}

}  // namespace lowband::parallel
