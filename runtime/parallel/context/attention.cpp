#include "runtime/parallel/context/attention.h"

#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>

#include "common/error.h"
#include "runtime/parallel/context/kv_messages.h"

namespace lowband::parallel {

namespace {

void ensure_size(const kernels::Backend& k, kernels::BackendBuffer<float>& b, size_t n) {
  if (b.size() < n) b = kernels::BackendBuffer<float>(k, n);
}

int64_t range_tokens(const TokenRange& r) { return r.second - r.first; }

// 0, 1, ..., T − 1, shared by the ranks of this process that ask for T.
std::shared_ptr<const std::vector<int64_t>> positions_upto(int64_t T) {
  static std::mutex mutex;
  static std::map<int64_t, std::weak_ptr<const std::vector<int64_t>>> made;
  const std::lock_guard<std::mutex> lock(mutex);
  std::weak_ptr<const std::vector<int64_t>>& slot = made[T];
  if (std::shared_ptr<const std::vector<int64_t>> p = slot.lock()) return p;
  auto p = std::make_shared<std::vector<int64_t>>(size_t(T));
  std::iota(p->begin(), p->end(), int64_t(0));
  slot = p;
  return p;
}

}  // namespace

ContextAttention::ContextAttention(const Scenario& s, int rank, std::unique_ptr<compress::KvCodec> codec,
                                   model::Model& model, const ContextCosts& costs, const SpanSink& spans)
    : scenario_(s), rank_(rank), context_ranks_(s.parallel.context), first_layer_(model.layout().first_layer()),
      layers_(model.layout().end_layer() - model.layout().first_layer()), seq_len_(s.model.seq_len),
      kv_row_(int64_t(s.model.kv_heads) * s.model.head_dim()), codec_(std::move(codec)), model_(model),
      k_(model.backend()), costs_(costs), spans_(spans) {
  if (!codec_) throw InputError("compression", "no K/V codec");
  owner_reconstructs_ = context_ranks_ > 1 && s.compression.method != CompressionMethod::none &&
                        s.compression.owner_kv == OwnerKv::reconstructed;
  for (int r = 0; r < context_ranks_; ++r) {
    ranges_.push_back(costs_.ranges(r));
    int64_t row = 0;
    chunk_row_.emplace_back();
    for (const auto& rg : ranges_.back()) {
      chunk_row_.back().push_back(row);
      row += range_tokens(rg);
    }
    local_tokens_.push_back(row);
  }
  global_positions_ = positions_upto(seq_len_);
  if (k_.device != kernels::Device::dry) {  // the codec's AdamW moments: a dry run keeps none
    codec_m_.assign(size_t(codec_->param_count()), 0.0f);
    codec_v_ = codec_m_;
  }
  use_slot(0);
}

void ContextAttention::use_slot(int slot) {
  if (slots_.size() <= size_t(slot)) slots_.resize(size_t(slot) + 1);
  slot_index_ = slot;
  slot_ = &slots_[size_t(slot)];
  if (slot_->lse.empty()) {
    slot_->lse.resize(size_t(layers_));
    slot_->k_hat.resize(size_t(layers_)), slot_->v_hat.resize(size_t(layers_));
    for (size_t l = 0; l < size_t(layers_); ++l)
      slot_->k_hat[l].resize(size_t(context_ranks_)), slot_->v_hat[l].resize(size_t(context_ranks_));
  }
}

const float* ContextAttention::attended_kv(int l, compress::KvTensor t, int owner) const {
  if (owner == rank_ && !owner_reconstructs_) return nullptr;
  const auto& hat = t == compress::KvTensor::k ? slot_->k_hat : slot_->v_hat;
  return hat[layer_index(l)][size_t(owner)].data();
}

int64_t ContextAttention::rows(int owner) const { return int64_t(slot_->sequences) * local_tokens_[size_t(owner)]; }

compress::KvBlockId ContextAttention::block_id(int l, compress::KvTensor t, int owner, int chunk, int sequence) const {
  return compress::KvBlockId{l, t, owner, chunk, slot_->first_sequence + sequence,
                             global_positions_->data() + ranges_[size_t(owner)][size_t(chunk)].first};
}

model::TokenBatch ContextAttention::gather(const int32_t* inputs, const int32_t* targets, int sequences,
                                           int first_sequence) {
  if (sequences < 1) throw InputError("training.batch_size", "a batch needs at least one sequence");
  slot_->sequences = sequences, slot_->first_sequence = first_sequence;
  const int64_t n = local_tokens_[size_t(rank_)], rows = n * sequences;
  inputs_.resize(size_t(rows)), targets_.resize(size_t(rows)), positions_.resize(size_t(rows));
  slot_->valid = 0;
  const auto& mine = ranges_[size_t(rank_)];
  for (int s = 0; s < sequences; ++s)
    for (size_t i = 0; i < mine.size(); ++i) {
      const int64_t row0 = s * n + chunk_row_[size_t(rank_)][i];
      for (int64_t t = mine[i].first; t < mine[i].second; ++t) {
        const size_t row = size_t(row0 + (t - mine[i].first));
        inputs_[row] = inputs[s * seq_len_ + t];
        targets_[row] = targets ? targets[s * seq_len_ + t] : -1;
        positions_[row] = t;
        slot_->valid += targets_[row] >= 0;
      }
    }
  for (size_t l = 0; l < size_t(layers_); ++l) {
    ensure_size(k_, slot_->lse[l], size_t(rows * scenario_.model.heads));
    for (int o = 0; o < context_ranks_; ++o) {
      if (o == rank_ && !owner_reconstructs_) continue;
      ensure_size(k_, slot_->k_hat[l][size_t(o)], size_t(this->rows(o) * kv_row_));
      ensure_size(k_, slot_->v_hat[l][size_t(o)], size_t(this->rows(o) * kv_row_));
    }
  }
  model::TokenBatch b;
  b.inputs = inputs_.data(), b.targets = targets ? targets_.data() : nullptr, b.positions = positions_.data();
  b.sequences = sequences, b.tokens = n;
  return b;
}

// Attention of this rank's queries against `owner`'s block (its own exact K/V,
// or the decoded one), forward (merged into the output by log-sum-exp) or
// backward (dK/dV of the block added into dk, dv; dQ into the model's).
void ContextAttention::attend(int l, int owner, bool backward, float* dk, float* dv) {
  const auto& m = scenario_.model;
  const int64_t hd = m.head_dim(), q_row = int64_t(m.heads) * hd;
  const float scale = float(1.0 / std::sqrt(double(hd)));
  auto& a = model_.activations(l);
  const bool own = owner == rank_;
  const bool exact = own && !owner_reconstructs_;  // else what the codec rebuilt, the owner's too
  const float* kb = exact ? a.k : slot_->k_hat[layer_index(l)][size_t(owner)].data();
  const float* vb = exact ? a.v : slot_->v_hat[layer_index(l)][size_t(owner)].data();
  const auto& qr = ranges_[size_t(rank_)];
  const auto& kr = ranges_[size_t(owner)];
  const int sequences = slot_->sequences;
  // The first block a query chunk meets (its own rank's, which always holds the
  // diagonal) writes its output; later ones merge into it.
  if (own && !backward) started_.assign(size_t(sequences) * qr.size(), 0);
  for (int s = 0; s < sequences; ++s)
    for (size_t qi = 0; qi < qr.size(); ++qi)
      for (size_t ki = 0; ki < kr.size(); ++ki) {
        if (kr[ki].first >= qr[qi].second) continue;  // fully masked
        kernels::AttentionShape sh;
        sh.nq = range_tokens(qr[qi]), sh.nk = range_tokens(kr[ki]);
        sh.heads = m.heads, sh.kv_heads = m.kv_heads, sh.head_dim = hd;
        sh.q_offset = qr[qi].first, sh.k_offset = kr[ki].first, sh.causal = true, sh.scale = scale;
        const int64_t qrow = s * local_tokens_[size_t(rank_)] + chunk_row_[size_t(rank_)][qi];
        const int64_t krow = s * local_tokens_[size_t(owner)] + chunk_row_[size_t(owner)][ki];
        float* lse = slot_->lse[layer_index(l)].data() + qrow * m.heads;
        if (backward) {
          k_.attention_backward(sh, a.q + qrow * q_row, kb + krow * kv_row_, vb + krow * kv_row_, lse,
                                delta_.data() + qrow * m.heads, model_.attention_grad_out() + qrow * q_row,
                                model_.dq() + qrow * q_row, dk + krow * kv_row_, dv + krow * kv_row_);
        } else if (char& first = started_[size_t(s) * qr.size() + qi]; !first) {
          k_.attention_forward(sh, a.q + qrow * q_row, kb + krow * kv_row_, vb + krow * kv_row_,
                               a.att + qrow * q_row, lse);
          first = 1;
        } else {
          ensure_size(k_, tmp_out_, size_t(sh.nq * q_row));
          ensure_size(k_, tmp_lse_, size_t(sh.nq * m.heads));
          k_.attention_forward(sh, a.q + qrow * q_row, kb + krow * kv_row_, vb + krow * kv_row_,
                               tmp_out_.data(), tmp_lse_.data());
          k_.attention_merge(sh.nq, m.heads, hd, a.att + qrow * q_row, lse, tmp_out_.data(), tmp_lse_.data());
        }
      }
}

void ContextAttention::forward_layer(comm::Communicator& comm, int l) {
  forward_layer_send(comm, l);
  forward_layer_finish(comm, l);
}

void ContextAttention::forward_layer_send(comm::Communicator& comm, int l) {
  const bool ring = scenario_.parallel.exchange == CpExchange::ring;
  std::vector<uint8_t> message;
  ComputeSpan qkv(spans_, "qkv",
                  costs_.pre_attention(rank_) + costs_.mos_project(l, rank_) +
                      (owner_reconstructs_ ? costs_.mos_reconstruct(l, rank_) : cost::Cost{}));
  model_.layer_forward_qkv(l);
  if (context_ranks_ > 1) encode_blocks(l, message);
  if (owner_reconstructs_) decode_blocks(l, rank_, message);  // the owner attends to what its receivers do
  qkv.done();
  if (context_ranks_ > 1) {
    const comm::Wire wire("kv", kv_message_wire_bytes(message));
    if (ring) comm.send((rank_ + 1) % context_ranks_, tag_kv(l), message.data(), message.size(), wire);
    else
      for (int j = 1; j < context_ranks_; ++j)
        comm.send((rank_ + j) % context_ranks_, tag_kv(l), message.data(), message.size(), wire);
  }
}

void ContextAttention::forward_layer_finish(comm::Communicator& comm, int l) {
  const bool ring = scenario_.parallel.exchange == CpExchange::ring;
  // Overlap: attend to each block as it arrives. Without: every block first.
  const bool overlap = scenario_.parallel.overlap;
  std::vector<std::vector<uint8_t>> arrived(static_cast<size_t>(context_ranks_));
  auto receive = [&](int k) {
    std::vector<uint8_t>& m = arrived[size_t(k)];
    receive_blocks(comm, ring ? (rank_ - 1 + context_ranks_) % context_ranks_ : owner_at(k), l, owner_at(k), m);
    if (ring && k < context_ranks_ - 1)  // pass it on before attending to it
      comm.send((rank_ + 1) % context_ranks_, tag_kv(l), m.data(), m.size(),
                comm::Wire("kv", kv_message_wire_bytes(m)));
  };
  if (!overlap)
    for (int k = 1; k < context_ranks_; ++k) receive(k);
  ComputeSpan own(spans_, "attention", costs_.attention(rank_, rank_, false));
  attend(l, rank_, false, nullptr, nullptr);
  own.done();
  for (int k = 1; k < context_ranks_; ++k) {
    if (overlap) receive(k);
    const int o = owner_at(k);
    const bool masked = costs_.pairs(rank_, o) <= 0;
    ComputeSpan sp(spans_, "attention",
                   (masked ? cost::Cost{} : costs_.attention(rank_, o, false)) + costs_.mos_reconstruct(l, o));
    decode_blocks(l, o, arrived[size_t(k)]);
    if (!masked) attend(l, o, false, nullptr, nullptr);
    sp.done();
    arrived[size_t(k)].clear();
  }
  ComputeSpan mlp(spans_, "mlp", costs_.post_attention(rank_));
  model_.layer_forward_post_attention(l);
  mlp.done();
}

void ContextAttention::backward_layer(comm::Communicator& comm, int l) {
  backward_layer_send(comm, l);
  backward_layer_finish(comm, l);
}

void ContextAttention::backward_layer_send(comm::Communicator& comm, int l) {
  const auto& m = scenario_.model;
  const int64_t hd = m.head_dim(), q_row = int64_t(m.heads) * hd;
  const bool ring = scenario_.parallel.exchange == CpExchange::ring;
  const int next = (rank_ + 1) % context_ranks_, prev = (rank_ - 1 + context_ranks_) % context_ranks_;
  ComputeSpan mlp(spans_, "mlp_bwd", cost::dense_backward(costs_.post_attention(rank_)));
  model_.layer_backward_post_attention(l);
  mlp.done();
  const int64_t rows = this->rows(rank_);
  ComputeSpan own(spans_, "attention_bwd",
                  costs_.attention(rank_, rank_, true) +
                      (owner_reconstructs_ ? costs_.mos_project(l, rank_) : cost::Cost{}));
  k_.zero(model_.dq(), size_t(rows * q_row) * sizeof(float));
  k_.zero(model_.dk(), size_t(rows * kv_row_) * sizeof(float));
  k_.zero(model_.dv(), size_t(rows * kv_row_) * sizeof(float));
  // The owner's own dK̂/dV̂ go back through the codec like a receiver's (added to
  // theirs in backward_layer_finish); exact, straight into dK/dV.
  float* own_dk = model_.dk();
  float* own_dv = model_.dv();
  if (owner_reconstructs_) {
    ensure_size(k_, own_dk_, size_t(rows * kv_row_)), ensure_size(k_, own_dv_, size_t(rows * kv_row_));
    k_.zero(own_dk_.data(), size_t(rows * kv_row_) * sizeof(float));
    k_.zero(own_dv_.data(), size_t(rows * kv_row_) * sizeof(float));
    own_dk = own_dk_.data(), own_dv = own_dv_.data();
  }
  ensure_size(k_, delta_, size_t(rows * m.heads));
  const auto& a = model_.activations(l);
  const auto& qr = ranges_[size_t(rank_)];
  for (int s = 0; s < slot_->sequences; ++s)
    for (size_t qi = 0; qi < qr.size(); ++qi) {
      const int64_t qrow = s * local_tokens_[size_t(rank_)] + chunk_row_[size_t(rank_)][qi];
      k_.attention_backward_delta(range_tokens(qr[qi]), m.heads, hd, a.att + qrow * q_row,
                                  model_.attention_grad_out() + qrow * q_row, delta_.data() + qrow * m.heads);
    }
  attend(l, rank_, true, own_dk, own_dv);
  if (owner_reconstructs_) encode_gradients(l, rank_, own_dk, own_dv, slot_->own_gradient);
  own.done();
  // Overlap: each partial goes out as soon as it is computed. Without: all the
  // rank's attention backward first, then the exchange.
  const bool overlap = scenario_.parallel.overlap;
  std::vector<std::vector<compress::CodecGradient>> partial(static_cast<size_t>(context_ranks_));
  std::vector<compress::CodecGradient> acc;
  std::vector<uint8_t> message;
  auto compute_partial = [&](int k) {
    const int o = owner_at(k);
    const bool masked = costs_.pairs(rank_, o) <= 0;
    ComputeSpan sp(spans_, "attention_bwd",
                   (masked ? cost::Cost{} : costs_.attention(rank_, o, true)) + costs_.mos_project(l, o));
    const size_t count = size_t(this->rows(o) * kv_row_);
    ensure_size(k_, dk_part_, count), ensure_size(k_, dv_part_, count);
    k_.zero(dk_part_.data(), count * sizeof(float));
    k_.zero(dv_part_.data(), count * sizeof(float));
    if (!masked) attend(l, o, true, dk_part_.data(), dv_part_.data());
    encode_gradients(l, o, dk_part_.data(), dv_part_.data(), partial[size_t(k)]);
    sp.done();
  };
  if (!overlap)
    for (int k = 1; k < context_ranks_; ++k) compute_partial(k);
  for (int k = 1; k < context_ranks_; ++k) {
    if (overlap) compute_partial(k);
    std::vector<compress::CodecGradient>& mine = partial[size_t(k)];
    if (ring && k > 1) {  // the accumulator for this owner's block from the ranks before
      receive_gradients(comm, prev, l, owner_at(k), acc);
      add_gradients(acc, mine);
      mine.swap(acc);
    }
    pack_gradients(mine, message);
    comm.send(ring ? next : owner_at(k), tag_dkv(l), message.data(), message.size(),
              comm::Wire("dkv", gradient_wire_bytes(mine)));
    mine.clear();
  }
}

void ContextAttention::backward_layer_finish(comm::Communicator& comm, int l) {
  const bool ring = scenario_.parallel.exchange == CpExchange::ring;
  const int prev = (rank_ - 1 + context_ranks_) % context_ranks_;
  std::vector<compress::CodecGradient> summed, acc;
  if (ring && context_ranks_ > 1) {
    receive_gradients(comm, prev, l, rank_, summed);
  } else {
    for (int src = 0; src < context_ranks_; ++src) {  // rank order: the same sum on every run
      if (src == rank_) continue;
      receive_gradients(comm, src, l, rank_, acc);
      if (summed.empty()) summed.swap(acc);
      else add_gradients(summed, acc);
    }
  }
  if (owner_reconstructs_) add_gradients(summed, slot_->own_gradient);  // after the others': one order everywhere
  ComputeSpan qkv(spans_, "qkv_bwd",
                  cost::dense_backward(costs_.pre_attention(rank_)) + costs_.mos_reconstruct(l, rank_));
  if (context_ranks_ > 1) decode_gradients(l, summed);
  model_.layer_backward_qkv(l);
  qkv.done();
}

}  // namespace lowband::parallel
