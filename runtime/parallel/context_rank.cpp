#include "runtime/parallel/context_rank.h"

#include <cmath>
#include <cstring>

#include "common/error.h"
#include "kernels/adamw.h"
#include "runtime/parallel/kv_messages.h"

namespace lowband::parallel {

class ContextRank::Span : public ComputeSpan {
 public:
  Span(ContextRank& r, const char* kind, const cost::Cost& c)
      : ComputeSpan(r.k_, r.log_, r.timing_, r.kernel_wall_seconds_, kind,
                    [&r, kind, c] { return r.costs_.seconds(r.rank_, c, kind); }) {}
};

namespace {

void ensure_size(const kernels::Backend& k, kernels::BackendBuffer<float>& b, size_t n) {
  if (b.size() < n) b = kernels::BackendBuffer<float>(k, n);
}

int64_t range_tokens(const TokenRange& r) { return r.second - r.first; }
int tag_kv(int layer) { return 2 * layer; }
int tag_dkv(int layer) { return 2 * layer + 1; }

}  // namespace

ContextRank::ContextRank(const Scenario& s, int rank, std::unique_ptr<compress::KvCodec> codec,
                         const kernels::Backend& k, ComputeTiming timing, comm::RankLog& log)
    : scenario_(s), rank_(rank), P_(s.parallel.context), L_(s.model.layers), seq_len_(s.model.seq_len),
      kv_row_(int64_t(s.model.kv_heads) * s.model.head_dim()), k_(k), timing_(timing), log_(log),
      costs_(scenario_), sync_(scenario_, k), codec_(std::move(codec)),
      model_(s.model, s.training.seed, model::ModelOptions{.device = k.device}),
      optimizer_(model_.layout(), optim::optimizer_config_from(s.training), k.device),
      lr_(optim::lr_schedule_from(s.training)) {
  if (!codec_) throw InputError("compression", "no K/V codec");
  for (int r = 0; r < P_; ++r) {
    ranges_.push_back(costs_.ranges(r));
    int64_t row = 0;
    chunk_row_.emplace_back();
    chunk_positions_.emplace_back();
    for (const auto& rg : ranges_.back()) {
      chunk_row_.back().push_back(row);
      row += range_tokens(rg);
      std::vector<int64_t> pos;
      for (int64_t t = rg.first; t < rg.second; ++t) pos.push_back(t);
      chunk_positions_.back().push_back(std::move(pos));
    }
    local_tokens_.push_back(row);
  }
  codec_m_.assign(size_t(codec_->param_count()), 0.0f);
  codec_v_ = codec_m_;
  k_hat_.resize(size_t(L_)), v_hat_.resize(size_t(L_));
  for (int l = 0; l < L_; ++l) k_hat_[size_t(l)].resize(size_t(P_)), v_hat_[size_t(l)].resize(size_t(P_));
  lse_.resize(size_t(L_));
}

compress::KvBlockId ContextRank::block_id(int l, compress::KvTensor t, int owner, int chunk, int sequence) const {
  return compress::KvBlockId{l, t, owner, chunk, sequence, chunk_positions_[size_t(owner)][size_t(chunk)].data()};
}

void ContextRank::begin(const int32_t* inputs, const int32_t* targets, int sequences) {
  if (sequences < 1) throw InputError("training.batch_size", "a batch needs at least one sequence");
  sequences_ = sequences;
  const auto& m = scenario_.model;
  const int64_t n = local_tokens_[size_t(rank_)], rows = n * sequences;
  inputs_.resize(size_t(rows)), targets_.resize(size_t(rows)), positions_.resize(size_t(rows));
  valid_ = 0;
  const auto& mine = ranges_[size_t(rank_)];
  for (int s = 0; s < sequences; ++s)
    for (size_t i = 0; i < mine.size(); ++i) {
      const int64_t row0 = s * n + chunk_row_[size_t(rank_)][i];
      for (int64_t t = mine[i].first; t < mine[i].second; ++t) {
        const size_t row = size_t(row0 + (t - mine[i].first));
        inputs_[row] = inputs[s * seq_len_ + t];
        targets_[row] = targets ? targets[s * seq_len_ + t] : -1;
        positions_[row] = t;
        valid_ += targets_[row] >= 0;
      }
    }
  for (int l = 0; l < L_; ++l) {
    ensure_size(k_, lse_[size_t(l)], size_t(rows * m.heads));
    for (int o = 0; o < P_; ++o) {
      if (o == rank_) continue;
      ensure_size(k_, k_hat_[size_t(l)][size_t(o)], size_t(this->rows(o) * kv_row_));
      ensure_size(k_, v_hat_[size_t(l)][size_t(o)], size_t(this->rows(o) * kv_row_));
    }
  }
  valid_global_ = 0;
  if (targets)
    for (int64_t i = 0; i < int64_t(sequences) * seq_len_; ++i) valid_global_ += targets[i] >= 0;
  model::TokenBatch b;
  b.inputs = inputs_.data(), b.targets = targets_.data(), b.positions = positions_.data();
  b.sequences = sequences, b.tokens = n;
  Span sp(*this, "embed", costs_.embed(rank_));
  model_.begin(b);
  sp.done();
}

// Attention of this rank's queries against `owner`'s block (its own exact K/V,
// or the decoded one), forward (merged into the output by log-sum-exp) or
// backward (dK/dV of the block added into dk, dv; dQ into the model's).
void ContextRank::attend(int l, int owner, bool backward, float* dk, float* dv) {
  const auto& m = scenario_.model;
  const int64_t hd = m.head_dim(), q_row = int64_t(m.heads) * hd;
  const float scale = float(1.0 / std::sqrt(double(hd)));
  auto& a = model_.activations(l);
  const bool own = owner == rank_;
  const float* kb = own ? a.k : k_hat_[size_t(l)][size_t(owner)].data();
  const float* vb = own ? a.v : v_hat_[size_t(l)][size_t(owner)].data();
  const auto& qr = ranges_[size_t(rank_)];
  const auto& kr = ranges_[size_t(owner)];
  // The first block a query chunk meets (its own rank's, which always holds the
  // diagonal) writes its output; later ones merge into it.
  if (own && !backward) started_.assign(size_t(sequences_) * qr.size(), 0);
  for (int s = 0; s < sequences_; ++s)
    for (size_t qi = 0; qi < qr.size(); ++qi)
      for (size_t ki = 0; ki < kr.size(); ++ki) {
        if (kr[ki].first >= qr[qi].second) continue;  // fully masked
        kernels::AttentionShape sh;
        sh.nq = range_tokens(qr[qi]), sh.nk = range_tokens(kr[ki]);
        sh.heads = m.heads, sh.kv_heads = m.kv_heads, sh.head_dim = hd;
        sh.q_offset = qr[qi].first, sh.k_offset = kr[ki].first, sh.causal = true, sh.scale = scale;
        const int64_t qrow = s * local_tokens_[size_t(rank_)] + chunk_row_[size_t(rank_)][qi];
        const int64_t krow = s * local_tokens_[size_t(owner)] + chunk_row_[size_t(owner)][ki];
        float* lse = lse_[size_t(l)].data() + qrow * m.heads;
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

void ContextRank::forward_layer(comm::Communicator& comm, int l) {
  const bool ring = scenario_.parallel.exchange == CpExchange::ring;
  std::vector<uint8_t> message;
  Span qkv(*this, "qkv", costs_.pre_attention(rank_) + costs_.mos_project(rank_));
  model_.layer_forward_qkv(l);
  if (P_ > 1) encode_blocks(l, message);
  qkv.done();
  if (P_ > 1) {
    const comm::Wire wire("kv", kv_message_wire_bytes(message));
    if (ring) comm.send((rank_ + 1) % P_, tag_kv(l), message.data(), message.size(), wire);
    else
      for (int j = 1; j < P_; ++j) comm.send((rank_ + j) % P_, tag_kv(l), message.data(), message.size(), wire);
  }
  // Overlap: attend to each block as it arrives. Without: every block first.
  const bool overlap = scenario_.parallel.overlap;
  std::vector<std::vector<uint8_t>> arrived(static_cast<size_t>(P_));
  auto receive = [&](int k) {
    std::vector<uint8_t>& m = arrived[size_t(k)];
    comm.recv_message(ring ? (rank_ - 1 + P_) % P_ : owner_at(k), tag_kv(l), m, "kv");
    if (ring && k < P_ - 1)  // pass it on before attending to it
      comm.send((rank_ + 1) % P_, tag_kv(l), m.data(), m.size(), comm::Wire("kv", kv_message_wire_bytes(m)));
  };
  if (!overlap)
    for (int k = 1; k < P_; ++k) receive(k);
  Span own(*this, "attention", costs_.attention(rank_, rank_, false));
  attend(l, rank_, false, nullptr, nullptr);
  own.done();
  for (int k = 1; k < P_; ++k) {
    if (overlap) receive(k);
    const int o = owner_at(k);
    const bool masked = costs_.pairs(rank_, o) <= 0;
    Span sp(*this, "attention",
            (masked ? cost::Cost{} : costs_.attention(rank_, o, false)) + costs_.mos_reconstruct(o));
    decode_blocks(l, o, arrived[size_t(k)]);
    if (!masked) attend(l, o, false, nullptr, nullptr);
    sp.done();
    arrived[size_t(k)].clear();
  }
  Span mlp(*this, "mlp", costs_.post_attention(rank_));
  model_.layer_forward_post_attention(l);
  mlp.done();
}

void ContextRank::backward_layer(comm::Communicator& comm, int l) {
  const auto& m = scenario_.model;
  const int64_t hd = m.head_dim(), q_row = int64_t(m.heads) * hd;
  const bool ring = scenario_.parallel.exchange == CpExchange::ring;
  const int next = (rank_ + 1) % P_, prev = (rank_ - 1 + P_) % P_;
  Span mlp(*this, "mlp_bwd", cost::dense_backward(costs_.post_attention(rank_)));
  model_.layer_backward_post_attention(l);
  mlp.done();
  const int64_t rows = this->rows(rank_);
  Span own(*this, "attention_bwd", costs_.attention(rank_, rank_, true));
  k_.zero(model_.dq(), size_t(rows * q_row) * sizeof(float));
  k_.zero(model_.dk(), size_t(rows * kv_row_) * sizeof(float));
  k_.zero(model_.dv(), size_t(rows * kv_row_) * sizeof(float));
  ensure_size(k_, delta_, size_t(rows * m.heads));
  const auto& a = model_.activations(l);
  const auto& qr = ranges_[size_t(rank_)];
  for (int s = 0; s < sequences_; ++s)
    for (size_t qi = 0; qi < qr.size(); ++qi) {
      const int64_t qrow = s * local_tokens_[size_t(rank_)] + chunk_row_[size_t(rank_)][qi];
      k_.attention_backward_delta(range_tokens(qr[qi]), m.heads, hd, a.att + qrow * q_row,
                                  model_.attention_grad_out() + qrow * q_row, delta_.data() + qrow * m.heads);
    }
  attend(l, rank_, true, model_.dk(), model_.dv());
  own.done();
  // Overlap: each partial goes out as soon as it is computed. Without: all the
  // rank's attention backward first, then the exchange.
  const bool overlap = scenario_.parallel.overlap;
  std::vector<std::vector<compress::CodecGradient>> partial(static_cast<size_t>(P_));
  std::vector<compress::CodecGradient> acc;
  std::vector<uint8_t> message;
  auto compute_partial = [&](int k) {
    const int o = owner_at(k);
    const bool masked = costs_.pairs(rank_, o) <= 0;
    Span sp(*this, "attention_bwd",
            (masked ? cost::Cost{} : costs_.attention(rank_, o, true)) + costs_.mos_project(o));
    const size_t count = size_t(this->rows(o) * kv_row_);
    ensure_size(k_, dk_part_, count), ensure_size(k_, dv_part_, count);
    k_.zero(dk_part_.data(), count * sizeof(float));
    k_.zero(dv_part_.data(), count * sizeof(float));
    if (!masked) attend(l, o, true, dk_part_.data(), dv_part_.data());
    encode_gradients(l, o, dk_part_.data(), dv_part_.data(), partial[size_t(k)]);
    sp.done();
  };
  if (!overlap)
    for (int k = 1; k < P_; ++k) compute_partial(k);
  for (int k = 1; k < P_; ++k) {
    if (overlap) compute_partial(k);
    std::vector<compress::CodecGradient>& mine = partial[size_t(k)];
    if (ring && k > 1) {  // the accumulator for this owner's block from the ranks before
      comm.recv_message(prev, tag_dkv(l), message, "dkv");
      unpack_gradients(message, acc);
      add_gradients(acc, mine);
      mine.swap(acc);
    }
    pack_gradients(mine, message);
    comm.send(ring ? next : owner_at(k), tag_dkv(l), message.data(), message.size(),
              comm::Wire("dkv", gradient_wire_bytes(mine)));
    mine.clear();
  }
  std::vector<compress::CodecGradient> summed;
  if (ring && P_ > 1) {
    comm.recv_message(prev, tag_dkv(l), message, "dkv");
    unpack_gradients(message, summed);
  } else {
    for (int src = 0; src < P_; ++src) {  // rank order: the same sum on every run
      if (src == rank_) continue;
      comm.recv_message(src, tag_dkv(l), message, "dkv");
      unpack_gradients(message, acc);
      if (summed.empty()) summed.swap(acc);
      else add_gradients(summed, acc);
    }
  }
  Span qkv(*this, "qkv_bwd", cost::dense_backward(costs_.pre_attention(rank_)) + costs_.mos_reconstruct(rank_));
  if (P_ > 1) decode_gradients(l, summed);
  model_.layer_backward_qkv(l);
  qkv.done();
}

float ContextRank::global_loss(comm::Communicator& comm, bool backward) {
  // Every rank reads the whole batch, so it counts the valid targets of all
  // ranks itself (begin); only the loss crosses ranks, for reporting (the
  // backward does not wait for it).
  Span head(*this, "lm_head", costs_.head(rank_));
  const float loss = model_.head_forward();
  head.done();
  double sum = valid_ > 0 ? double(loss) * double(valid_) : 0.0;
  comm.all_reduce_sum(&sum, 1, comm::Wire("loss", -1, /*deferred=*/backward));
  if (backward) {
    model_.zero_grads();
    Span sp(*this, "lm_head_bwd", cost::dense_backward(costs_.head(rank_)));
    model_.head_backward(valid_global_ > 0 ? float(double(valid_) / double(valid_global_)) : 0.0f);
    sp.done();
  }
  return valid_global_ > 0 ? float(sum / double(valid_global_)) : 0.0f;
}

float ContextRank::forward_backward(comm::Communicator& comm, const int32_t* inputs, const int32_t* targets,
                                    int sequences, bool sync_gradients) {
  codec_->zero_grads();
  begin(inputs, targets, sequences);
  for (int l = 0; l < L_; ++l) forward_layer(comm, l);
  const float loss = global_loss(comm, true);
  const std::vector<GradBucket> buckets = gradient_buckets(model_.layout());
  size_t next_bucket = 0;
  auto sync_bucket = [&]() {
    if (sync_gradients) sync_.all_reduce_bucket(comm, model_, buckets[next_bucket]);
    ++next_bucket;
  };
  sync_bucket();  // the head
  for (int l = L_ - 1; l >= 0; --l) {
    backward_layer(comm, l);
    sync_bucket();
  }
  Span sp(*this, "embed_bwd", cost::dense_backward(costs_.embed(rank_)));
  model_.embedding_backward();
  sp.done();
  sync_bucket();
  return loss;
}

float ContextRank::evaluate(comm::Communicator& comm, const int32_t* inputs, const int32_t* targets,
                            int sequences) {
  begin(inputs, targets, sequences);
  for (int l = 0; l < L_; ++l) forward_layer(comm, l);
  return global_loss(comm, false);
}

void ContextRank::step_codec(comm::Communicator& comm, double lr) {
  if (codec_->param_count() <= 0) return;
  if (codec_m_.size() != size_t(codec_->param_count()))  // e.g. created after the warm-up
    codec_m_.assign(size_t(codec_->param_count()), 0.0f), codec_v_ = codec_m_, codec_steps_ = 0;
  // Each rank holds the gradients of the blocks it owns: sum them (the heads are shared).
  comm.all_reduce_sum(codec_->grads(), codec_->param_count(), "codec_grad");
  kernels::AdamWConfig c;
  c.lr = float(lr);
  kernels::cpu::adamw_step(codec_->params(), codec_->grads(), codec_m_.data(), codec_v_.data(),
                           codec_->param_count(), ++codec_steps_, c);
}

RankStepResult ContextRank::train_step(comm::Communicator& comm, int step, const int32_t* inputs,
                                       const int32_t* targets, int sequences) {
  RankStepResult res;
  begin_codec_step(comm, step);
  res.loss = forward_backward(comm, inputs, targets, sequences, !sync_.sparse());
  reconstruction_errors(comm, res);
  res.weight_sync = sync_.syncs_at(step);
  res.lr = lr_.at(step + 1);
  log_.join_deferred();  // the optimiser needs every gradient bucket
  if (sync_.sparse() && valid_ > 0)  // own gradient: of the rank's own mean loss
    k_.scale_inplace(model_.grads(), float(double(valid_global_) / double(valid_)), model_.param_count());
  Span sp(*this, "optimizer", costs_.optimizer());
  res.grad_norm = optimizer_.step(model_.params(), model_.grads(), res.lr).grad_norm;
  sp.done();
  if (sync_.sparse() && res.weight_sync) sync_.sparse_average(comm, model_, step);
  step_codec(comm, res.lr);
  return res;
}

}  // namespace lowband::parallel
