#include "runtime/parallel/context_step_program.h"

#include "runtime/compress/error_sums.h"
#include "runtime/compress/make_codec.h"
#include "runtime/model/param_layout.h"
#include "runtime/parallel/weight_sync.h"

namespace lowband::parallel {

namespace {

comm::Event collective(comm::EventType type, const std::vector<int>& members, double bytes, const char* kind,
                       bool deferred) {
  comm::Event e = comm::event_of(type, -1, 0, 0, bytes, kind);
  e.deferred = deferred;
  e.members = members;
  return e;
}

comm::Event all_reduce(const std::vector<int>& members, double bytes, const char* kind, bool deferred) {
  return collective(comm::EventType::all_reduce, members, bytes, kind, deferred);
}

}  // namespace

ContextStepProgram::ContextStepProgram(const Scenario& s, bool weight_sync_step)
    : s_(s), C_(s.parallel.context), weight_sync_step_(weight_sync_step), costs_(s),
      codec_(compress::make_kv_codec(s)), layers_(s, costs_, *codec_) {}

void ContextStepProgram::weight_sync(comm::RankLog& log, const std::vector<int>& group, bool before_optimizer) const {
  const WeightSync ws = s_.compression.weight_sync;
  const model::ParamLayout layout(s_.model);
  const double bpe = s_.model.bytes_per_element;
  if (before_optimizer) {  // ReplicaSync::exchange_gradients: every step, even alone
    if (ws == WeightSync::topk_grad) {  // every rank's packed message, all-gathered
      log.add(collective(comm::EventType::all_gather, group, weight_sync_wire_bytes(s_, layout) * C_, "grad_sync", false));
    } else if (ws == WeightSync::lowrank_grad) {  // P's all-reduce, then Q's
      const auto [first, second] = lowrank_grad_elements(layout, s_.compression.sync_fraction);
      log.add(all_reduce(group, double(first) * bpe, "grad_sync", false));
      log.add(all_reduce(group, double(second) * bpe, "grad_sync", false));
    } else if (ws == WeightSync::sparse_grad) {
      log.add(all_reduce(group, weight_sync_wire_bytes(s_, layout), "grad_sync", false));
    }
    return;
  }
  // sparse_average sends nothing alone; exchange_update's slice goes out even then.
  if ((ws == WeightSync::sparse && weight_sync_step_ && C_ > 1) || ws == WeightSync::sparse_update)
    log.add(all_reduce(group, weight_sync_wire_bytes(s_, layout), "grad_sync", false));
}

void ContextStepProgram::append(int c, comm::RankLog& log, const DataBucketHook& data) const {
  const int node = s_.parallel.node_of(c);
  ContextGroup group;  // the replica: communicator 0
  for (int r = 0; r < C_; ++r) group.ranks.push_back(r);
  auto span = [&](const cost::Cost& cost, const char* kind) { log.compute(costs_.seconds(c, cost, kind), kind); };
  const std::vector<GradBucket> buckets = gradient_buckets(model::ParamLayout(s_.model));
  size_t next = 0;
  auto sync_bucket = [&]() {  // ContextRank::forward_backward's order
    const GradBucket& b = buckets.at(next++);
    if (b.end > b.begin && C_ > 1 && s_.compression.weight_sync == WeightSync::all_reduce)
      log.add(all_reduce(group.ranks, double(b.end - b.begin) * s_.model.bytes_per_element, "grad_sync", true));
    if (data) data(c, b, log);
  };
  span(costs_.embed(c), "embed");
  for (int l = 0; l < s_.model.layers; ++l) layers_.forward(log, group, c, l, node);
  span(costs_.head(c), "lm_head");
  log.add(all_reduce(group.ranks, sizeof(double), "loss", true));  // even alone: ContextRank calls it
  span(cost::dense_backward(costs_.head(c)), "lm_head_bwd");
  sync_bucket();
  for (int l = s_.model.layers - 1; l >= 0; --l) {
    layers_.backward(log, group, c, l, node);
    sync_bucket();
  }
  span(cost::dense_backward(costs_.embed(c)), "embed_bwd");
  sync_bucket();
  if (const compress::ErrorSums* e = codec_->error_sums(); e && C_ > 1)
    log.add(all_reduce(group.ranks, double(e->size()) * sizeof(double), "codec_error", true));
  log.join_deferred();
  weight_sync(log, group.ranks, /*before_optimizer=*/true);
  span(costs_.optimizer(), "optimizer");
  weight_sync(log, group.ranks, /*before_optimizer=*/false);
  if (codec_->param_count() > 0)
    log.add(all_reduce(group.ranks, double(codec_->param_count()) * sizeof(float), "codec_grad", false));
}

double ContextStepProgram::model_flops() const {
  double forward = 0;
  for (int c = 0; c < C_; ++c) {
    double layer = costs_.pre_attention(c).flops + costs_.post_attention(c).flops;
    for (int o = 0; o < C_; ++o)
      if (o == c || costs_.pairs(c, o) > 0) layer += costs_.attention(c, o, false).flops;
    forward += s_.model.layers * layer + costs_.head(c).flops;
  }
  return 3.0 * forward;
}

double ContextStepProgram::uncompressed_kv_bytes() const {
  // Each owner's block reaches the C − 1 others once (ring or all-gather), and its
  // gradient returns as much, in every layer.
  double per_layer = 0;
  for (int o = 0; o < C_; ++o) per_layer += 2.0 * (C_ - 1) * layers_.plain_kv_bytes(o);
  return per_layer * s_.model.layers;
}

}  // namespace lowband::parallel
