// ContextRank's side of the K/V codec (context_rank.h): its blocks into one
// message per layer, the blocks it receives back into K̂/V̂, the dK/dV messages,
// and the codec's collectives (parameter gradients, warm-up Gram sums, error sums).
#include "runtime/compress/error_sums.h"
#include "runtime/parallel/context_rank.h"
#include "runtime/parallel/kv_messages.h"

namespace lowband::parallel {

using compress::KvTensor;

const float* ContextRank::to_host(const float* ptr, size_t count, std::vector<float>& host) {
  if (k_.device == kernels::Device::cpu) return ptr;
  host.resize(count);
  k_.download(host.data(), ptr, count * sizeof(float));
  return host.data();
}

void ContextRank::encode_blocks(int l, std::vector<uint8_t>& message) {
  const auto& a = model_.activations(l);
  begin_kv_message(message);
  compress::KvMessage block;
  const auto& mine = ranges_[size_t(rank_)];
  for (int s = 0; s < sequences_; ++s)
    for (size_t i = 0; i < mine.size(); ++i) {
      const int64_t n = mine[i].second - mine[i].first;
      const int64_t off = (s * local_tokens_[size_t(rank_)] + chunk_row_[size_t(rank_)][i]) * kv_row_;
      for (KvTensor t : {KvTensor::k, KvTensor::v}) {
        const float* z = to_host((t == KvTensor::k ? a.k : a.v) + off, size_t(n * kv_row_), host_a_);
        codec_->encode(block_id(l, t, rank_, int(i), s), n, z, block);
        append_block(message, block);
      }
    }
}

void ContextRank::decode_blocks(int l, int owner, const std::vector<uint8_t>& message) {
  const std::vector<compress::KvMessage> blocks = kv_message_blocks(message);
  const auto& theirs = ranges_[size_t(owner)];
  if (blocks.size() != size_t(sequences_) * theirs.size() * 2)
    throw std::logic_error("K/V message of rank " + std::to_string(owner) + ": " + std::to_string(blocks.size()) +
                           " blocks");
  size_t b = 0;
  for (int s = 0; s < sequences_; ++s)
    for (size_t i = 0; i < theirs.size(); ++i) {
      const int64_t n = theirs[i].second - theirs[i].first;
      const int64_t off = (s * local_tokens_[size_t(owner)] + chunk_row_[size_t(owner)][i]) * kv_row_;
      for (KvTensor t : {KvTensor::k, KvTensor::v}) {
        float* z_hat = (t == KvTensor::k ? k_hat_ : v_hat_)[size_t(l)][size_t(owner)].data() + off;
        if (k_.device == kernels::Device::cpu) {
          codec_->decode(block_id(l, t, owner, int(i), s), n, blocks[b++], z_hat);
        } else {
          host_b_.resize(size_t(n * kv_row_));
          codec_->decode(block_id(l, t, owner, int(i), s), n, blocks[b++], host_b_.data());
          k_.upload(z_hat, host_b_.data(), host_b_.size() * sizeof(float));
        }
      }
    }
}

void ContextRank::encode_gradients(int l, int owner, const float* dk, const float* dv,
                                   std::vector<compress::KvGradient>& out) {
  const auto& theirs = ranges_[size_t(owner)];
  out.assign(size_t(sequences_) * theirs.size() * 2, {});
  size_t b = 0;
  for (int s = 0; s < sequences_; ++s)
    for (size_t i = 0; i < theirs.size(); ++i) {
      const int64_t n = theirs[i].second - theirs[i].first;
      const int64_t off = (s * local_tokens_[size_t(owner)] + chunk_row_[size_t(owner)][i]) * kv_row_;
      for (KvTensor t : {KvTensor::k, KvTensor::v}) {
        const float* dz_hat = to_host((t == KvTensor::k ? dk : dv) + off, size_t(n * kv_row_), host_a_);
        codec_->encode_gradient(block_id(l, t, owner, int(i), s), n, dz_hat, out[b++]);
      }
    }
}

void ContextRank::decode_gradients(int l, const std::vector<compress::KvGradient>& summed) {
  const auto& mine = ranges_[size_t(rank_)];
  if (summed.size() != size_t(sequences_) * mine.size() * 2)
    throw std::logic_error("dK/dV message for rank " + std::to_string(rank_) + ": " +
                           std::to_string(summed.size()) + " blocks");
  size_t b = 0;
  for (int s = 0; s < sequences_; ++s)
    for (size_t i = 0; i < mine.size(); ++i) {
      const int64_t n = mine[i].second - mine[i].first;
      const int64_t off = (s * local_tokens_[size_t(rank_)] + chunk_row_[size_t(rank_)][i]) * kv_row_;
      for (KvTensor t : {KvTensor::k, KvTensor::v}) {
        float* dz = (t == KvTensor::k ? model_.dk() : model_.dv()) + off;
        if (k_.device == kernels::Device::cpu) {
          codec_->decode_gradient(block_id(l, t, rank_, int(i), s), n, summed[b++], dz);
        } else {  // the codec adds into dz
          host_b_.resize(size_t(n * kv_row_));
          k_.download(host_b_.data(), dz, host_b_.size() * sizeof(float));
          codec_->decode_gradient(block_id(l, t, rank_, int(i), s), n, summed[b++], host_b_.data());
          k_.upload(dz, host_b_.data(), host_b_.size() * sizeof(float));
        }
      }
    }
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
