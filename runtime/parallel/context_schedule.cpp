#include "runtime/parallel/context_schedule.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "runtime/compress/identity_codec.h"
#include "runtime/compress/make_codec.h"
#include "runtime/cost_model.h"
#include "runtime/model/param_layout.h"
#include "runtime/parallel/layout.h"
#include "runtime/parallel/weight_sync.h"
#include "sim/collectives.h"

namespace lowband::parallel {

namespace {

using sim::TaskId;
constexpr TaskId kNone = -1;

void validate(const Scenario& s) {
  const auto& m = s.model;
  const int P = s.parallel.context;
  if (P < 1) throw InputError("parallel.context", "must be at least 1");
  if (s.parallel.pipeline != 1)
    throw InputError("parallel.pipeline", "estimate models context parallelism only (expected 1)");
  if (s.parallel.data != 1)
    throw InputError("parallel.data", "estimate models context parallelism only (expected 1)");
  if (m.layers < 1) throw InputError("model.layers", "must be at least 1");
  if (m.heads < 1 || m.d_model % m.heads != 0)
    throw InputError("model.heads", "must divide model.d_model");
  if (m.kv_heads < 1 || m.heads % m.kv_heads != 0)
    throw InputError("model.kv_heads", "must divide model.heads");
  const int64_t chunks = s.parallel.split == CpSplit::zigzag ? 2LL * P : P;
  if (m.seq_len < chunks)
    throw InputError("model.seq_len", "fewer tokens (" + std::to_string(m.seq_len) + ") than the " +
                                          std::to_string(chunks) + " context-parallel chunks");
  if (s.network.nodes < P)
    throw InputError("network.nodes", std::to_string(s.network.nodes) + " nodes for " +
                                          std::to_string(P) + " context-parallel ranks");
  if (s.training.batch_size < 1) throw InputError("training.batch_size", "must be at least 1");
}

class Builder {
 public:
  Builder(const Scenario& s, const ContextScheduleOptions& opt)
      : s_(s), m_(s.model), opt_(opt), costs_(s), P_(s.parallel.context), batch_(s.training.batch_size),
        out_{sim::StepGraph(P_)}, last_(P_, kNone) {
    out_.tokens = batch_ * static_cast<double>(m_.seq_len);
    // Message sizes come from the codec the trainer uses, one message per chunk.
    const auto codec = compress::make_kv_codec(s);
    codec_grad_bytes_ = double(codec->param_count()) * sizeof(float);
    if (codec->error_sums()) codec_error_bytes_ = double(m_.layers) * 4 * sizeof(double);
    const compress::IdentityCodec plain(m_.kv_heads, m_.head_dim(), m_.bytes_per_element);
    for (int r = 0; r < P_; ++r) {
      double fwd = 0, bwd = 0, uncompressed = 0;
      for (const auto& rg : costs_.ranges(r)) {
        const int64_t chunk = rg.second - rg.first;
        for (auto t : {compress::KvTensor::k, compress::KvTensor::v}) {
          fwd += codec->message_bytes(t, chunk);
          bwd += codec->gradient_message_bytes(t, chunk);
          uncompressed += plain.message_bytes(t, chunk);
        }
      }
      wire_bytes_.push_back(batch_ * fwd);
      grad_wire_bytes_.push_back(batch_ * bwd);
      plain_bytes_.push_back(batch_ * uncompressed);
    }
  }

  ContextStep build() {
    for (int r = 0; r < P_; ++r) compute(r, costs_.embed(r), {}, "embed");
    for (int l = 0; l < m_.layers; ++l) layer_forward();
    for (int r = 0; r < P_; ++r) {
      const cost::Cost head = costs_.head(r);
      forward_model_flops_ += head.flops;
      compute(r, head, {}, "lm_head");
    }
    all_reduce(sizeof(double), "loss");  // the mean loss, for reporting: nothing waits for it
    for (int r = 0; r < P_; ++r) compute(r, cost::dense_backward(costs_.head(r)), {}, "lm_head_bwd");
    grad_sync(cost::head_parameters(m_));
    for (int l = 0; l < m_.layers; ++l) {  // from the last layer down
      layer_backward();
      grad_sync(cost::layer_parameters(m_));
    }
    for (int r = 0; r < P_; ++r)
      compute(r, cost::dense_backward(costs_.embed(r)), {}, "embed_bwd");
    grad_sync(cost::embedding_parameters(m_));
    if (codec_error_bytes_ > 0) all_reduce(codec_error_bytes_, "codec_error");
    const WeightSync ws = s_.compression.weight_sync;
    const bool before_step = ws == WeightSync::sparse_grad || ws == WeightSync::topk_grad ||
                             ws == WeightSync::lowrank_grad;
    if (ws != WeightSync::all_reduce && opt_.include_weight_sync && before_step) {  // the optimiser steps on it
      const std::vector<TaskId> done = sparse_exchange();
      for (int r = 0; r < P_ && !done.empty(); ++r) sync_done_[r].push_back(done[r]);
    }
    if (opt_.include_optimizer)
      for (int r = 0; r < P_; ++r) compute(r, costs_.optimizer(), sync_done_[r], "optimizer");
    if (ws != WeightSync::all_reduce && opt_.include_weight_sync && !before_step)  // weights or updates, averaged
      sparse_exchange();
    if (codec_grad_bytes_ > 0) all_reduce(codec_grad_bytes_, "codec_grad");
    out_.model_flops = 3.0 * forward_model_flops_;
    if (!s_.parallel.placement.empty()) out_.graph = place_on_nodes(out_.graph, Layout(s_.parallel));
    return std::move(out_);
  }

 private:
  // A compute task on `rank`, after the rank's previous compute task.
  TaskId compute(int rank, const cost::Cost& c, std::vector<TaskId> deps, const char* tag) {
    if (last_[rank] != kNone) deps.push_back(last_[rank]);
    const double sec = costs_.seconds(rank, c, tag);
    return last_[rank] = out_.graph.add_compute(rank, sec, std::move(deps), tag);
  }

  TaskId transfer(int src, int dst, int owner, std::vector<TaskId> deps, const char* tag) {
    out_.uncompressed_kv_bytes += plain_bytes_[owner];
    const double bytes = (tag[0] == 'd' ? grad_wire_bytes_ : wire_bytes_)[owner];
    return out_.graph.add_transfer(src, dst, bytes, std::move(deps), tag);
  }

  cost::Cost mos_project(int owner) const { return costs_.mos_project(owner); }
  cost::Cost mos_reconstruct(int owner) const { return costs_.mos_reconstruct(owner); }
  cost::Cost attention(int q, int k, bool backward) const { return costs_.attention(q, k, backward); }
  cost::Cost pre_attention(int r) const { return costs_.pre_attention(r); }
  cost::Cost post_attention(int r) const { return costs_.post_attention(r); }

  // The rank whose block reaches `r` in exchange round k (1..P-1): r - k.
  int owner_at(int r, int k) const { return ((r - k) % P_ + P_) % P_; }

  void layer_forward() {
    std::vector<TaskId> qkv(P_);
    for (int r = 0; r < P_; ++r) {
      forward_model_flops_ += pre_attention(r).flops;
      qkv[r] = compute(r, pre_attention(r) + mos_project(r), {}, "qkv");
    }
    // arrival[r][k-1]: the transfer that delivers owner_at(r, k)'s block to r.
    std::vector<std::vector<TaskId>> arrival(P_, std::vector<TaskId>(P_ > 1 ? P_ - 1 : 0));
    for (int k = 1; k < P_; ++k)
      for (int r = 0; r < P_; ++r) {
        if (s_.parallel.exchange == CpExchange::ring) {  // forward what arrived last round
          const int dst = (r + 1) % P_;
          const TaskId dep = k == 1 ? qkv[r] : arrival[r][k - 2];
          arrival[dst][k - 1] = transfer(r, dst, owner_at(r, k - 1), {dep}, "kv");
        } else {  // all_gather: every block straight from its owner
          const int dst = (r + k) % P_;
          arrival[dst][k - 1] = transfer(r, dst, r, {qkv[r]}, "kv");
        }
      }
    for (int r = 0; r < P_; ++r) {
      std::vector<TaskId> wait_all = s_.parallel.overlap ? std::vector<TaskId>{} : arrival[r];
      forward_model_flops_ += attention(r, r, false).flops;
      compute(r, attention(r, r, false), wait_all, "attention");
      for (int k = 1; k < P_; ++k) {
        const int o = owner_at(r, k);
        if (costs_.pairs(r, o) <= 0) continue;  // fully masked block: nothing to compute
        forward_model_flops_ += attention(r, o, false).flops;
        compute(r, attention(r, o, false) + mos_reconstruct(o), {arrival[r][k - 1]}, "attention");
      }
      forward_model_flops_ += post_attention(r).flops;
      compute(r, post_attention(r), {}, "mlp");
    }
  }

  void layer_backward() {
    for (int r = 0; r < P_; ++r) {
      compute(r, cost::dense_backward(post_attention(r)), {}, "mlp_bwd");
      compute(r, attention(r, r, true), {}, "attention_bwd");
    }
    // incoming[r]: the dK/dV transfers r must have before its QKV backward.
    std::vector<std::vector<TaskId>> incoming(P_);
    const bool ring = s_.parallel.exchange == CpExchange::ring;
    const bool overlap = s_.parallel.overlap;
    // Without overlap every attention backward of the rank runs before its first send.
    std::vector<std::vector<TaskId>> done(P_, std::vector<TaskId>(P_ > 1 ? P_ - 1 : 0, kNone));
    for (int k = 1; k < P_; ++k)
      for (int r = 0; r < P_; ++r) {
        const int o = owner_at(r, k);
        // dK/dV of o's block, projected onto o's subspace before it is sent; a
        // fully masked block adds nothing (the ring just passes its accumulator on).
        done[r][k - 1] = costs_.pairs(r, o) <= 0 ? last_[r]
                         : compute(r, attention(r, o, true) + mos_project(o), {}, "attention_bwd");
      }
    std::vector<TaskId> acc_in(P_, kNone);  // ring: the accumulator that arrived last round
    for (int k = 1; k < P_; ++k) {
      std::vector<TaskId> acc_next(P_, kNone);
      for (int r = 0; r < P_; ++r) {
        const int o = owner_at(r, k);
        std::vector<TaskId> deps = {overlap ? done[r][k - 1] : done[r].back()};
        if (ring) {  // add to the accumulator for o's block and pass it on towards o
          if (acc_in[r] != kNone) deps.push_back(acc_in[r]);
          const int dst = (r + 1) % P_;
          acc_next[dst] = transfer(r, dst, o, deps, "dkv");
        } else {  // all_gather: the partial straight back to its owner
          incoming[o].push_back(transfer(r, o, o, deps, "dkv"));
        }
      }
      acc_in = acc_next;
    }
    if (ring && P_ > 1)
      for (int r = 0; r < P_; ++r) incoming[r].push_back(acc_in[r]);  // round P-1 ends at the owner
    for (int r = 0; r < P_; ++r) {
      const cost::Cost c = cost::dense_backward(pre_attention(r)) + mos_reconstruct(r);
      compute(r, c, incoming[r], "qkv_bwd");
    }
  }

  // Keeps `params` parameters' gradients equal across ranks, from each rank's
  // latest compute task on (bucketed like DDP: overlaps the rest of the backward).
  void grad_sync(double params) {
    if (sparse_ || !opt_.include_weight_sync) return;
    const std::vector<TaskId> finished = all_reduce(params * m_.bytes_per_element, "grad_sync");
    for (int r = 0; r < P_ && !finished.empty(); ++r) sync_done_[r].push_back(finished[r]);
  }

  // The sparse syncs' collective (weight_sync.h): topk_grad all-gathers every
  // rank's message, the others all-reduce a random slice.
  std::vector<TaskId> sparse_exchange() {
    const model::ParamLayout layout(m_);
    const double bytes = weight_sync_wire_bytes(s_, layout);
    const WeightSync ws = s_.compression.weight_sync;
    if (ws != WeightSync::topk_grad && ws != WeightSync::lowrank_grad) return all_reduce(bytes, "grad_sync");
    if (P_ < 2) return {};
    std::vector<int> ranks(P_);
    sim::RankDeps after(P_);
    for (int r = 0; r < P_; ++r) ranks[r] = r, after[r] = {last_[r]};
    if (ws == WeightSync::topk_grad) return sim::ring_all_gather(out_.graph, ranks, bytes * P_, after, "grad_sync");
    // lowrank_grad: P's all-reduce, then Q's, which needs the orthonormal P
    const auto [first, second] = lowrank_grad_elements(layout, s_.compression.sync_fraction);
    const std::vector<TaskId> p = sim::ring_all_reduce(out_.graph, ranks, double(first) * m_.bytes_per_element,
                                                        after, "grad_sync");
    for (int r = 0; r < P_; ++r) after[r] = {p[size_t(r)]};
    return sim::ring_all_reduce(out_.graph, ranks, double(second) * m_.bytes_per_element, after, "grad_sync");
  }

  // A ring all-reduce of `bytes` per rank from each rank's latest compute task on;
  // no compute task waits for it unless the caller makes one.
  std::vector<TaskId> all_reduce(double bytes, const char* kind) {
    if (P_ < 2) return {};
    std::vector<int> ranks(P_);
    sim::RankDeps after(P_);
    for (int r = 0; r < P_; ++r) ranks[r] = r, after[r] = {last_[r]};
    return sim::ring_all_reduce(out_.graph, ranks, bytes, after, kind);
  }

  const Scenario& s_;
  const ModelConfig& m_;
  ContextScheduleOptions opt_;
  ContextCosts costs_;
  int P_;
  double batch_;
  ContextStep out_;
  std::vector<TaskId> last_;               // each rank's latest compute task
  std::vector<std::vector<TaskId>> sync_done_ = std::vector<std::vector<TaskId>>(P_);
  std::vector<double> wire_bytes_, grad_wire_bytes_, plain_bytes_;  // per owner's K/V (dK/dV), whole batch
  bool sparse_ = s_.compression.weight_sync != WeightSync::all_reduce;  // no gradient all-reduce
  double codec_grad_bytes_ = 0;   // the codec's parameter gradients (MoS heads), float32
  double codec_error_bytes_ = 0;  // its reconstruction-error sums, float64
  double forward_model_flops_ = 0;
};

}  // namespace

ContextStep build_context_parallel(const Scenario& scenario, const ContextScheduleOptions& options) {
  validate(scenario);
  return Builder(scenario, options).build();
}

sim::StepGraph build_context_parallel_step(const Scenario& scenario, bool include_weight_sync) {
  ContextScheduleOptions options;
  options.include_weight_sync = include_weight_sync;
  return build_context_parallel(scenario, options).graph;
}

}  // namespace lowband::parallel
