#include "runtime/parallel/context_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/error.h"
#include "kernels/adamw.h"
#include "kernels/attention.h"

namespace lowband::parallel {
namespace {

// Wall time of the work between construction and seconds(): on a GPU it waits
// for the queued kernels at both ends.
class Stopwatch {
 public:
  explicit Stopwatch(const kernels::Backend& k) : k_(k) {
    k_.synchronize();
    t0_ = std::chrono::steady_clock::now();
  }
  double seconds() const {
    k_.synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  const kernels::Backend& k_;
  std::chrono::steady_clock::time_point t0_;
};

const kernels::Backend& backend_for(const TrainingConfig& t) {
  try {
    return kernels::backend(t.backend == "cuda" ? kernels::Device::cuda : kernels::Device::cpu);
  } catch (const std::runtime_error& e) {
    throw InputError("training.backend", std::string("\"") + t.backend + "\": " + e.what());
  }
}

// Grows b to hold at least n floats (contents not kept).
void ensure_size(const kernels::Backend& k, kernels::BackendBuffer<float>& b, size_t n) {
  if (b.size() < n) b = kernels::BackendBuffer<float>(k, n);
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

int64_t range_tokens(const TokenRange& r) { return r.second - r.first; }

}  // namespace

ContextTrainer::ContextTrainer(const Scenario& s, std::unique_ptr<compress::KvCodec> codec,
                               ComputeTiming timing)
    : scenario_(s), k_(&backend_for(s.training)), P_(s.parallel.context), L_(s.model.layers),
      seq_len_(s.model.seq_len),
      codec_(std::move(codec)), lr_(optim::lr_schedule_from(s.training)) {
  model::check_model_config(s.model);
  build_context_parallel_step(s);  // validates the split, the nodes and the batch (InputError)
  if (!codec_) throw InputError("compression", "no K/V codec");
  lr_.validate();
  models_.reserve(size_t(P_));
  optimizers_.reserve(size_t(P_));
  model::ModelOptions model_options;
  model_options.device = k_->device;
  for (int r = 0; r < P_; ++r) {
    models_.emplace_back(s.model, s.training.seed, model_options);
    optimizers_.emplace_back(models_.back().layout(), optim::optimizer_config_from(s.training),
                             k_->device);
    ranges_.push_back(rank_token_ranges(seq_len_, P_, s.parallel.split, r));
    int64_t row = 0;
    chunk_row_.emplace_back();
    for (const auto& rg : ranges_.back()) chunk_row_.back().push_back(row), row += range_tokens(rg);
    local_tokens_.push_back(row);
  }
  figures_.measured = timing == ComputeTiming::measured;
  codec_m_.assign(size_t(codec_->param_count()), 0.0f);
  codec_v_ = codec_m_;
  inputs_.resize(size_t(P_)), targets_.resize(size_t(P_)), positions_.resize(size_t(P_));
  valid_.assign(size_t(P_), 0);
  for (auto* per_layer : {&k_hat_, &v_hat_, &lse_}) {
    per_layer->resize(size_t(L_));
    for (auto& ranks : *per_layer) ranks.resize(size_t(P_));
  }
  dk_hat_.resize(size_t(P_)), dv_hat_.resize(size_t(P_));
}

bool ContextTrainer::syncs_weights(int step) const {
  const auto& c = scenario_.compression;
  if (c.weight_sync == WeightSync::all_reduce) return true;
  return (step + 1) % std::max(1, c.sync_every) == 0;
}

void ContextTrainer::begin(const int32_t* inputs, const int32_t* targets, int sequences) {
  if (sequences < 1) throw InputError("training.batch_size", "a batch needs at least one sequence");
  sequences_ = sequences;
  figures_.reset(P_, L_);
  const auto& m = scenario_.model;
  const int64_t kv_row = int64_t(m.kv_heads) * m.head_dim();
  for (int r = 0; r < P_; ++r) {
    const int64_t n = local_tokens_[size_t(r)], rows = n * sequences;
    auto &in = inputs_[size_t(r)], &tg = targets_[size_t(r)];
    auto& pos = positions_[size_t(r)];
    in.resize(size_t(rows)), tg.resize(size_t(rows)), pos.resize(size_t(rows));
    int64_t valid = 0;
    for (int s = 0; s < sequences; ++s)
      for (size_t i = 0; i < ranges_[size_t(r)].size(); ++i) {
        const TokenRange rg = ranges_[size_t(r)][i];
        const int64_t row0 = s * n + chunk_row_[size_t(r)][i];
        for (int64_t t = rg.first; t < rg.second; ++t) {
          const int64_t row = row0 + (t - rg.first);
          in[size_t(row)] = inputs[s * seq_len_ + t];
          tg[size_t(row)] = targets ? targets[s * seq_len_ + t] : -1;
          pos[size_t(row)] = t;
          valid += tg[size_t(row)] >= 0;
        }
      }
    valid_[size_t(r)] = valid;
    for (int l = 0; l < L_; ++l) {
      ensure_size(*k_, k_hat_[size_t(l)][size_t(r)], size_t(rows * kv_row));
      ensure_size(*k_, v_hat_[size_t(l)][size_t(r)], size_t(rows * kv_row));
      ensure_size(*k_, lse_[size_t(l)][size_t(r)], size_t(rows * m.heads));
    }
    model::TokenBatch b;
    b.inputs = in.data(), b.targets = tg.data(), b.positions = pos.data();
    b.sequences = sequences, b.tokens = n;
    Stopwatch w(*k_);
    models_[size_t(r)].begin(b);
    figures_.ranks[size_t(r)].embed = w.seconds();
  }
}

void ContextTrainer::forward_layer(int l) {
  const auto& m = scenario_.model;
  const int64_t hd = m.head_dim(), kv_row = int64_t(m.kv_heads) * hd, q_row = int64_t(m.heads) * hd;
  const float scale = float(1.0 / std::sqrt(double(hd)));
  // Q, K, V of every rank; each block through the codec once (what receivers see).
  for (int r = 0; r < P_; ++r) {
    Stopwatch w(*k_);
    model::Model& mod = models_[size_t(r)];
    mod.layer_forward_qkv(l);
    double bytes = 0;
    if (P_ > 1) {
      const auto& a = mod.activations(l);
      const int chunks = int(ranges_[size_t(r)].size());
      for (int s = 0; s < sequences_; ++s)
        for (int i = 0; i < chunks; ++i) {
          const int64_t n = range_tokens(ranges_[size_t(r)][size_t(i)]);
          const int64_t row = s * local_tokens_[size_t(r)] + chunk_row_[size_t(r)][size_t(i)];
          const int64_t off = row * kv_row;
          compress::KvBlockId id{l, compress::KvTensor::k, r, i, s, positions_[size_t(r)].data() + row};
          bytes += codec_forward(id, n, a.k + off, k_hat_[size_t(l)][size_t(r)].data() + off);
          id.tensor = compress::KvTensor::v;
          bytes += codec_forward(id, n, a.v + off, v_hat_[size_t(l)][size_t(r)].data() + off);
        }
    }
    figures_.kv_bytes[size_t(l)][size_t(r)] = bytes;
    figures_.ranks[size_t(r)].layers[size_t(l)].qkv = w.seconds();
  }
  // Blockwise attention: own block first, then in ring arrival order.
  for (int r = 0; r < P_; ++r) {
    model::Model& mod = models_[size_t(r)];
    auto& a = mod.activations(l);
    const auto& qr = ranges_[size_t(r)];
    std::vector<char> started(size_t(sequences_) * qr.size(), 0);
    for (int k = 0; k < P_; ++k) {
      Stopwatch w(*k_);
      const int o = ((r - k) % P_ + P_) % P_;
      const float* kb = o == r ? a.k : k_hat_[size_t(l)][size_t(o)].data();
      const float* vb = o == r ? a.v : v_hat_[size_t(l)][size_t(o)].data();
      const auto& kr = ranges_[size_t(o)];
      for (int s = 0; s < sequences_; ++s)
        for (size_t qi = 0; qi < qr.size(); ++qi)
          for (size_t ki = 0; ki < kr.size(); ++ki) {
            if (kr[ki].first >= qr[qi].second) continue;  // fully masked
            kernels::AttentionShape sh;
            sh.nq = range_tokens(qr[qi]), sh.nk = range_tokens(kr[ki]);
            sh.heads = m.heads, sh.kv_heads = m.kv_heads, sh.head_dim = hd;
            sh.q_offset = qr[qi].first, sh.k_offset = kr[ki].first, sh.causal = true, sh.scale = scale;
            const int64_t qrow = s * local_tokens_[size_t(r)] + chunk_row_[size_t(r)][qi];
            const int64_t krow = s * local_tokens_[size_t(o)] + chunk_row_[size_t(o)][ki];
            float* out = a.att + qrow * q_row;
            float* lse = lse_[size_t(l)][size_t(r)].data() + qrow * m.heads;
            char& first = started[size_t(s) * qr.size() + qi];
            if (!first) {
              k_->attention_forward(sh, a.q + qrow * q_row, kb + krow * kv_row,
                                    vb + krow * kv_row, out, lse);
              first = 1;
            } else {
              ensure_size(*k_, tmp_out_, size_t(sh.nq * q_row));
              ensure_size(*k_, tmp_lse_, size_t(sh.nq * m.heads));
              k_->attention_forward(sh, a.q + qrow * q_row, kb + krow * kv_row,
                                    vb + krow * kv_row, tmp_out_.data(), tmp_lse_.data());
              k_->attention_merge(sh.nq, m.heads, hd, out, lse, tmp_out_.data(), tmp_lse_.data());
            }
          }
      figures_.ranks[size_t(r)].layers[size_t(l)].attention[size_t(o)] = w.seconds();
    }
    Stopwatch w(*k_);
    mod.layer_forward_post_attention(l);
    figures_.ranks[size_t(r)].layers[size_t(l)].mlp = w.seconds();
  }
}

void ContextTrainer::backward_layer(int l) {
  const auto& m = scenario_.model;
  const int64_t hd = m.head_dim(), kv_row = int64_t(m.kv_heads) * hd, q_row = int64_t(m.heads) * hd;
  const float scale = float(1.0 / std::sqrt(double(hd)));
  for (int r = 0; r < P_; ++r) {
    Stopwatch w(*k_);
    models_[size_t(r)].layer_backward_post_attention(l);
    figures_.ranks[size_t(r)].layers[size_t(l)].mlp_bwd = w.seconds();
    const size_t kv_count = size_t(sequences_ * local_tokens_[size_t(r)] * kv_row);
    for (Buffer* b : {&dk_hat_[size_t(r)], &dv_hat_[size_t(r)]}) {
      ensure_size(*k_, *b, kv_count);
      k_->zero(b->data(), kv_count * sizeof(float));
    }
  }
  for (int r = 0; r < P_; ++r) {
    model::Model& mod = models_[size_t(r)];
    auto& a = mod.activations(l);
    const int64_t rows = sequences_ * local_tokens_[size_t(r)];
    k_->zero(mod.dq(), size_t(rows * q_row) * sizeof(float));
    k_->zero(mod.dk(), size_t(rows * kv_row) * sizeof(float));
    k_->zero(mod.dv(), size_t(rows * kv_row) * sizeof(float));
    const float* dout = mod.attention_grad_out();
    const float* lse_all = lse_[size_t(l)][size_t(r)].data();
    const auto& qr = ranges_[size_t(r)];
    for (int k = 0; k < P_; ++k) {
      Stopwatch w(*k_);
      const int o = ((r - k) % P_ + P_) % P_;
      if (k == 0) {  // delta (heads, n) per query chunk, from the merged output
        ensure_size(*k_, delta_, size_t(rows * m.heads));
        for (int s = 0; s < sequences_; ++s)
          for (size_t qi = 0; qi < qr.size(); ++qi) {
            const int64_t qrow = s * local_tokens_[size_t(r)] + chunk_row_[size_t(r)][qi];
            k_->attention_backward_delta(range_tokens(qr[qi]), m.heads, hd, a.att + qrow * q_row,
                                         dout + qrow * q_row, delta_.data() + qrow * m.heads);
          }
      }
      const float* kb = o == r ? a.k : k_hat_[size_t(l)][size_t(o)].data();
      const float* vb = o == r ? a.v : v_hat_[size_t(l)][size_t(o)].data();
      float* dk = o == r ? mod.dk() : dk_hat_[size_t(o)].data();
      float* dv = o == r ? mod.dv() : dv_hat_[size_t(o)].data();
      const auto& kr = ranges_[size_t(o)];
      for (int s = 0; s < sequences_; ++s)
        for (size_t qi = 0; qi < qr.size(); ++qi)
          for (size_t ki = 0; ki < kr.size(); ++ki) {
            if (kr[ki].first >= qr[qi].second) continue;
            kernels::AttentionShape sh;
            sh.nq = range_tokens(qr[qi]), sh.nk = range_tokens(kr[ki]);
            sh.heads = m.heads, sh.kv_heads = m.kv_heads, sh.head_dim = hd;
            sh.q_offset = qr[qi].first, sh.k_offset = kr[ki].first, sh.causal = true, sh.scale = scale;
            const int64_t qrow = s * local_tokens_[size_t(r)] + chunk_row_[size_t(r)][qi];
            const int64_t krow = s * local_tokens_[size_t(o)] + chunk_row_[size_t(o)][ki];
            k_->attention_backward(sh, a.q + qrow * q_row, kb + krow * kv_row, vb + krow * kv_row,
                                   lse_all + qrow * m.heads, delta_.data() + qrow * m.heads,
                                   dout + qrow * q_row, mod.dq() + qrow * q_row,
                                   dk + krow * kv_row, dv + krow * kv_row);
          }
      figures_.ranks[size_t(r)].layers[size_t(l)].attention_bwd[size_t(o)] = w.seconds();
    }
  }
  // Each owner takes back the receivers' summed dK/dV through the codec, then
  // back-propagates its QKV projection.
  for (int o = 0; o < P_; ++o) {
    Stopwatch w(*k_);
    model::Model& mod = models_[size_t(o)];
    double bytes = 0;
    if (P_ > 1) {
      const int chunks = int(ranges_[size_t(o)].size());
      for (int s = 0; s < sequences_; ++s)
        for (int i = 0; i < chunks; ++i) {
          const int64_t n = range_tokens(ranges_[size_t(o)][size_t(i)]);
          const int64_t row = s * local_tokens_[size_t(o)] + chunk_row_[size_t(o)][size_t(i)];
          const int64_t off = row * kv_row;
          compress::KvBlockId id{l, compress::KvTensor::k, o, i, s, positions_[size_t(o)].data() + row};
          bytes += codec_backward(id, n, dk_hat_[size_t(o)].data() + off, mod.dk() + off);
          id.tensor = compress::KvTensor::v;
          bytes += codec_backward(id, n, dv_hat_[size_t(o)].data() + off, mod.dv() + off);
        }
    }
    figures_.dkv_bytes[size_t(l)][size_t(o)] = bytes;
    mod.layer_backward_qkv(l);
    figures_.ranks[size_t(o)].layers[size_t(l)].qkv_bwd = w.seconds();
  }
}

float ContextTrainer::global_loss(bool backward) {
  int64_t valid_global = 0;
  for (int64_t v : valid_) valid_global += v;
  double sum = 0;
  for (int r = 0; r < P_; ++r) {
    Stopwatch w(*k_);
    const float loss = models_[size_t(r)].head_forward();
    figures_.ranks[size_t(r)].lm_head = w.seconds();
    if (valid_[size_t(r)] > 0) sum += double(loss) * double(valid_[size_t(r)]);
  }
  if (backward)
    for (int r = 0; r < P_; ++r) {
      models_[size_t(r)].zero_grads();
      Stopwatch w(*k_);
      const double share = valid_global > 0 ? double(valid_[size_t(r)]) / double(valid_global) : 0.0;
      models_[size_t(r)].head_backward(float(share));
      figures_.ranks[size_t(r)].lm_head_bwd = w.seconds();
    }
  return valid_global > 0 ? float(sum / double(valid_global)) : 0.0f;
}

float ContextTrainer::forward_backward(const int32_t* inputs, const int32_t* targets, int sequences) {
  codec_->zero_grads();
  begin(inputs, targets, sequences);
  for (int l = 0; l < L_; ++l) forward_layer(l);
  const float loss = global_loss(true);
  for (int l = L_ - 1; l >= 0; --l) backward_layer(l);
  for (int r = 0; r < P_; ++r) {
    Stopwatch w(*k_);
    models_[size_t(r)].embedding_backward();
    figures_.ranks[size_t(r)].embed_bwd = w.seconds();
  }
  return loss;
}

float ContextTrainer::evaluate(const int32_t* inputs, const int32_t* targets, int sequences) {
  begin(inputs, targets, sequences);
  for (int l = 0; l < L_; ++l) forward_layer(l);
  return global_loss(false);
}

void ContextTrainer::all_reduce_gradients() {
  if (P_ < 2) return;
  const size_t count = size_t(models_[0].param_count()), bytes = count * sizeof(float);
  ensure_size(*k_, sum_, count);
  k_->copy(sum_.data(), models_[0].grads(), bytes);
  for (int r = 1; r < P_; ++r)  // rank order: the same sum on every run
    k_->add_inplace(sum_.data(), models_[size_t(r)].grads(), int64_t(count));
  for (int r = 0; r < P_; ++r) k_->copy(models_[size_t(r)].grads(), sum_.data(), bytes);
}

void ContextTrainer::sparse_sync(int step) {
  const auto& tensors = models_[0].layout().tensors();
  // The draws are made on the host; a GPU's replicas are copied out and back.
  const bool on_host = k_->device == kernels::Device::cpu;
  std::vector<std::vector<float>> staged(on_host ? 0 : static_cast<size_t>(P_));
  std::vector<float*> params(static_cast<size_t>(P_));
  for (int r = 0; r < P_; ++r) {
    if (!on_host) staged[size_t(r)] = models_[size_t(r)].params_to_host();
    params[size_t(r)] = on_host ? models_[size_t(r)].params() : staged[size_t(r)].data();
  }
  const double fraction = scenario_.compression.sync_fraction;
  for (size_t ti = 0; ti < tensors.size(); ++ti) {
    const int64_t count = tensors[ti].count();
    const int64_t picks = std::max<int64_t>(1, int64_t(std::llround(fraction * double(count))));
    uint64_t state = splitmix64(scenario_.training.seed ^ (uint64_t(step) << 20) ^ ti);
    const bool all = picks >= count;  // fraction 1: every element, no draws
    for (int64_t j = 0; j < (all ? count : picks); ++j) {
      state = splitmix64(state);
      const int64_t i = tensors[ti].offset + (all ? j : int64_t(state % uint64_t(count)));
      double sum = 0;
      for (int r = 0; r < P_; ++r) sum += params[size_t(r)][i];
      const float mean = float(sum / P_);
      for (int r = 0; r < P_; ++r) params[size_t(r)][i] = mean;
    }
  }
  if (!on_host)
    for (int r = 0; r < P_; ++r)
      k_->upload(models_[size_t(r)].params(), staged[size_t(r)].data(),
                 staged[size_t(r)].size() * sizeof(float));
}

size_t ContextTrainer::size_staging(int64_t n) {
  const size_t count = size_t(n * scenario_.model.kv_heads * scenario_.model.head_dim());
  stage_in_.resize(count), stage_out_.resize(count);
  return count * sizeof(float);
}

double ContextTrainer::codec_forward(const compress::KvBlockId& id, int64_t n, const float* z,
                                     float* z_hat) {
  if (k_->device == kernels::Device::cpu) return codec_->forward(id, n, z, z_hat);
  const size_t bytes = size_staging(n);
  k_->download(stage_in_.data(), z, bytes);
  const double wire = codec_->forward(id, n, stage_in_.data(), stage_out_.data());
  k_->upload(z_hat, stage_out_.data(), bytes);
  return wire;
}

double ContextTrainer::codec_backward(const compress::KvBlockId& id, int64_t n, const float* dz_hat,
                                      float* dz) {
  if (k_->device == kernels::Device::cpu) return codec_->backward(id, n, dz_hat, dz);
  const size_t bytes = size_staging(n);
  k_->download(stage_in_.data(), dz_hat, bytes);
  k_->download(stage_out_.data(), dz, bytes);  // the codec adds into dz
  const double wire = codec_->backward(id, n, stage_in_.data(), stage_out_.data());
  k_->upload(dz, stage_out_.data(), bytes);
  return wire;
}

StepRecord ContextTrainer::train_step(int step, const int32_t* inputs, const int32_t* targets,
                                      int sequences, bool record) {
  StepRecord rec;
  rec.step = step;
  codec_->begin_step(step);
  rec.loss = forward_backward(inputs, targets, sequences);
  // Read now: an evaluate() after this step would add its blocks to the codec's sums.
  rec.kv_reconstruction_error_k = codec_->reconstruction_errors(compress::KvTensor::k);
  rec.kv_reconstruction_error_v = codec_->reconstruction_errors(compress::KvTensor::v);
  rec.weight_sync = syncs_weights(step);
  rec.lr = lr_.at(step + 1);
  const bool sparse = scenario_.compression.weight_sync == WeightSync::sparse;
  if (!sparse) all_reduce_gradients();
  int64_t valid_global = 0;
  for (int64_t v : valid_) valid_global += v;
  for (int r = 0; r < P_; ++r) {
    model::Model& mod = models_[size_t(r)];
    if (sparse && valid_[size_t(r)] > 0) {  // own gradient: of the rank's own mean loss
      const float k = float(double(valid_global) / double(valid_[size_t(r)]));
      k_->scale_inplace(mod.grads(), k, mod.param_count());
    }
    Stopwatch w(*k_);
    const optim::StepStats stats = optimizers_[size_t(r)].step(mod.params(), mod.grads(), rec.lr);
    figures_.ranks[size_t(r)].optimizer = w.seconds();
    if (r == 0) rec.grad_norm = stats.grad_norm;
  }
  if (sparse && rec.weight_sync && P_ > 1) sparse_sync(step);
  if (codec_->param_count() > 0) {  // the codec's heads: shared by all ranks, grads summed
    if (codec_m_.size() != size_t(codec_->param_count()))  // e.g. created after the warm-up
      codec_m_.assign(size_t(codec_->param_count()), 0.0f), codec_v_ = codec_m_, codec_steps_ = 0;
    kernels::AdamWConfig c;
    c.lr = float(rec.lr);
    kernels::cpu::adamw_step(codec_->params(), codec_->grads(), codec_m_.data(), codec_v_.data(),
                             codec_->param_count(), ++codec_steps_, c);
  }
  for (const auto& r : figures_.ranks) {
    rec.kernel_wall_seconds += r.embed + r.lm_head + r.lm_head_bwd + r.embed_bwd + r.optimizer;
    for (const auto& l : r.layers) {
      rec.kernel_wall_seconds += l.qkv + l.mlp + l.mlp_bwd + l.qkv_bwd;
      for (double t : l.attention) rec.kernel_wall_seconds += t;
      for (double t : l.attention_bwd) rec.kernel_wall_seconds += t;
    }
  }
  if (record) {
    Stopwatch w(*k_);
    ContextScheduleOptions options;
    options.include_weight_sync = rec.weight_sync;
    options.figures = &figures_;
    rec.graph = build_context_parallel(scenario_, options).graph;
    rec.record_wall_seconds = w.seconds();
  }
  return rec;
}

}  // namespace lowband::parallel
