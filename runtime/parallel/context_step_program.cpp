#include "runtime/parallel/context_step_program.h"

#include "runtime/compress/error_sums.h"
#include "runtime/compress/make_codec.h"
#include "runtime/model/param_layout.h"

namespace lowband::parallel {

namespace {

comm::Event all_reduce(const std::vector<int>& members, double bytes, const char* kind, bool deferred) {
  comm::Event e = comm::event_of(comm::EventType::all_reduce, -1, 0, 0, bytes, kind);
  e.deferred = deferred;
  e.members = members;
  return e;
}

}  // namespace

ContextStepProgram::ContextStepProgram(const Scenario& s)
    : s_(s), C_(s.parallel.context), costs_(s), codec_(compress::make_kv_codec(s)), layers_(s, costs_, *codec_) {}

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
  span(costs_.optimizer(), "optimizer");
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

}  // namespace lowband::parallel
