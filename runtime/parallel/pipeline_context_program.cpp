#include "runtime/parallel/pipeline_context_program.h"

#include "runtime/compress/error_sums.h"
#include "runtime/compress/make_codec.h"
#include "runtime/model/param_layout.h"
#include "runtime/parallel/pipeline_schedule.h"
#include "runtime/parallel/weight_sync.h"

namespace lowband::parallel {

namespace {

// Communicators: the world (0) and the pipeline groups (1) as a run splits them;
// each stage's context group its own id, so that assemble_step_graph never
// mistakes one stage's collective for another's.
constexpr int kPipelineComm = 1, kFirstContextComm = 2;
constexpr double kLossBytes = 2 * sizeof(double);  // loss sum, squared gradient norm
int tag_act(int microbatch) { return 2 * microbatch; }  // PipelineRank's tags
int tag_act_grad(int microbatch) { return 2 * microbatch + 1; }

}  // namespace

PipelineContextProgram::PipelineContextProgram(const Scenario& s, const PipelineCosts& costs,
                                               const compress::BoundaryCodec& boundary)
    : s_(s), costs_(costs), boundary_(boundary), P_(costs.stages()), C_(costs.context_ranks()),
      M_(s.parallel.microbatches), kv_codec_(compress::make_kv_codec(costs.microbatch_scenario())),
      layers_(costs.microbatch_scenario(), costs.context(), *kv_codec_) {
  codec_grad_bytes_ = double(kv_codec_->param_count()) * sizeof(float);
  if (const compress::ErrorSums* e = kv_codec_->error_sums()) codec_error_bytes_ = double(e->size()) * sizeof(double);
}

int64_t PipelineContextProgram::rows(int c) const { return int64_t(costs_.context().tokens(c)); }

double PipelineContextProgram::uncompressed_kv_bytes() const {
  // Each owner's block reaches the C − 1 others once (ring or all-gather), and its
  // gradient returns as much: per layer of every microbatch.
  double per_layer = 0;
  for (int o = 0; o < C_; ++o) per_layer += 2.0 * (C_ - 1) * layers_.plain_kv_bytes(o);
  return per_layer * s_.model.layers * M_;
}

ContextGroup PipelineContextProgram::context_group(int stage) const {
  ContextGroup g;
  for (int c = 0; c < C_; ++c) g.ranks.push_back(stage * C_ + c);
  g.comm_id = kFirstContextComm + stage;
  return g;
}

void PipelineContextProgram::all_reduce(comm::RankLog& log, const std::vector<int>& members, int comm_id,
                                        double bytes, const char* kind, bool deferred) const {
  comm::Event e;
  e.type = comm::EventType::all_reduce;
  e.kind = kind;
  e.bytes = bytes;
  e.comm_id = comm_id;
  e.deferred = deferred;
  e.members = members;
  log.add(std::move(e));
}

void PipelineContextProgram::append(int rank, comm::RankLog& log, const DataBucketHook& data) const {
  const int st = rank / C_, c = rank % C_;
  const int node = s_.parallel.node_of(rank);
  const ContextCosts& cc = costs_.context();
  const ContextGroup group = context_group(st);
  const int first = s_.parallel.stage_first_layer(st, s_.model.layers), count = costs_.layers(st);
  const bool embeds = st == 0, heads = st == P_ - 1;
  const double act = boundary_.message_bytes(rows(c)), act_grad = boundary_.gradient_bytes(rows(c));
  auto span = [&](const cost::Cost& cost, const char* kind) {
    log.compute(costs_.rank_seconds(rank, cost, kind), kind);
  };
  for (const PipelineOp& op : pipeline_schedule(s_.parallel.schedule, P_, st, M_)) {
    const int m = op.microbatch;
    if (op.forward) {
      if (st > 0) log.add(comm::event_of(comm::EventType::recv, rank - C_, tag_act(m), kPipelineComm, act, "act"));
      span(embeds ? cc.embed(c) : cost::Cost{}, "stage_in");  // later stages: the boundary decode
      for (int l = first; l < first + count; ++l) layers_.forward(log, group, c, l, node);
      span(heads ? cc.head(c) : cost::Cost{}, "stage_out");  // head + loss, or the boundary encode
      if (!heads) log.add(comm::event_of(comm::EventType::send, rank + C_, tag_act(m), kPipelineComm, act, "act"));
    } else {
      if (!heads) log.add(comm::event_of(comm::EventType::recv, rank + C_, tag_act_grad(m), kPipelineComm, act_grad, "act_grad"));
      span(heads ? cost::dense_backward(cc.head(c)) : cost::Cost{}, "stage_out_bwd");
      for (int l = first + count - 1; l >= first; --l) layers_.backward(log, group, c, l, node);
      span(embeds ? cost::dense_backward(cc.embed(c)) : cost::Cost{}, "stage_in_bwd");
      if (st > 0) log.add(comm::event_of(comm::EventType::send, rank - C_, tag_act_grad(m), kPipelineComm, act_grad, "act_grad"));
    }
  }
  // The stage's gradients, bucket by bucket (ReplicaSync::all_reduce_bucket:
  // deferred, so the buckets travel together), after the last backward; the K/V
  // codec is one for the whole model, so its sums go over the world.
  const model::ParamLayout layout(s_.model, model::StageSpan{first, count, embeds, heads});
  for (const GradBucket& b : gradient_buckets(layout))
    if (b.end > b.begin)
      all_reduce(log, group.ranks, group.comm_id, double(b.end - b.begin) * s_.model.bytes_per_element,
                 "grad_sync", true);
  if (data)
    for (const GradBucket& b : gradient_buckets(layout)) data(rank, b, log);
  std::vector<int> world(static_cast<size_t>(P_ * C_));
  for (int r = 0; r < P_ * C_; ++r) world[size_t(r)] = r;
  if (codec_error_bytes_ > 0) all_reduce(log, world, 0, codec_error_bytes_, "codec_error", true);
  log.join_deferred();  // the gradient norm and the optimizer need every bucket
  all_reduce(log, world, 0, kLossBytes, "loss", false);
  span(costs_.optimizer(st), "optimizer");
  if (codec_grad_bytes_ > 0) all_reduce(log, world, 0, codec_grad_bytes_, "codec_grad", false);
}

}  // namespace lowband::parallel
