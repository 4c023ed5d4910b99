#include "runtime/parallel/pipeline_graph.h"

#include <string>

#include "comm/recording.h"
#include "common/error.h"
#include "runtime/compress/boundary_codec.h"
#include "runtime/parallel/pipeline_context_program.h"
#include "runtime/parallel/layout.h"
#include "runtime/model/param_layout.h"
#include "runtime/parallel/weight_sync.h"
#include "runtime/parallel/pipeline_costs.h"
#include "runtime/parallel/pipeline_schedule.h"

namespace lowband::parallel {

namespace {

// Message tags of the two directions (any pair works: each direction is its own
// (source, destination) queue in assemble_step_graph).
constexpr int kActTag = 1, kGradTag = 2;
constexpr double kLossBytes = 2 * sizeof(double);  // loss sum, squared gradient norm

void validate(const Scenario& s) {
  if (s.model.seq_len < 1) throw InputError("model.seq_len", "must be at least 1");
  if (s.training.batch_size < 1) throw InputError("training.batch_size", "must be at least 1");
  const int P = s.parallel.pipeline, C = s.parallel.context;
  if (s.network.nodes < P * C)
    throw InputError("network.nodes", std::to_string(s.network.nodes) + " nodes for " + std::to_string(P) +
                                          " pipeline stages" +
                                          (C > 1 ? " x " + std::to_string(C) + " context ranks" : ""));
  // The stage's gradients are all-reduced over its context group every step (the
  // pipeline x context program); a sparse sync is context parallelism alone's.
  if (C > 1 && s.compression.weight_sync != WeightSync::all_reduce)
    throw InputError("compression.weight_sync", "pipeline stages with context ranks all-reduce their gradients "
                                                "every step (expected \"all_reduce\")");
}

// Today's program of stage s alone (C = 1): one "stage_fwd" per F, one
// "stage_bwd" per B, the loss all-reduce, the optimizer.
void stage_program(const Scenario& s, const PipelineCosts& costs, const PipelineStep& out, int st,
                   comm::RankLog& log, const DataBucketHook& data) {
  const int P = costs.stages(), M = s.parallel.microbatches;
  std::vector<int> all(static_cast<size_t>(P));
  for (int r = 0; r < P; ++r) all[size_t(r)] = r;
  const double fwd = costs.seconds(st, costs.forward(st), "stage_fwd");
  const double bwd = costs.seconds(st, costs.backward(st), "stage_bwd");
  for (const PipelineOp& op : pipeline_schedule(s.parallel.schedule, P, st, M)) {
    if (op.forward) {
      if (st > 0) log.add(comm::event_of(comm::EventType::recv, st - 1, kActTag, 0, out.message_bytes, "act"));
      log.compute(fwd, "stage_fwd");
      if (st < P - 1) log.add(comm::event_of(comm::EventType::send, st + 1, kActTag, 0, out.message_bytes, "act"));
    } else {
      if (st < P - 1) log.add(comm::event_of(comm::EventType::recv, st + 1, kGradTag, 0, out.gradient_bytes, "act_grad"));
      log.compute(bwd, "stage_bwd");
      if (st > 0) log.add(comm::event_of(comm::EventType::send, st - 1, kGradTag, 0, out.gradient_bytes, "act_grad"));
    }
  }
  if (data) {  // the replicas' sums of the stage's gradients, then the join (PipelineRank)
    const int first = s.parallel.stage_first_layer(st, s.model.layers);
    const model::ParamLayout layout(s.model, model::StageSpan{first, costs.layers(st), st == 0, st == P - 1});
    for (const GradBucket& b : gradient_buckets(layout)) data(st, b, log);
    log.join_deferred();
  }
  comm::Event loss = comm::event_of(comm::EventType::all_reduce, -1, 0, 0, kLossBytes, "loss");
  loss.members = all;
  log.add(std::move(loss));
  log.compute(costs.seconds(st, costs.optimizer(st), "optimizer"), "optimizer");
}

}  // namespace

PipelineStep pipeline_rank_logs(const Scenario& s, std::vector<comm::RankLog>& logs, const DataBucketHook& data) {
  const PipelineCosts costs(s);  // validates the pipeline keys first
  validate(s);
  const int P = costs.stages(), C = costs.context_ranks(), M = s.parallel.microbatches;
  const int64_t n = costs.microbatch_rows();
  const auto codec = compress::make_boundary_codec(s);
  PipelineStep out;
  out.tokens = double(s.training.batch_size) * double(s.model.seq_len);
  out.context_ranks = C;
  out.message_bytes = codec->message_bytes(n);
  out.gradient_bytes = codec->gradient_bytes(n);
  out.boundary_codec = codec->describe();
  out.uncompressed_boundary_bytes = 2.0 * M * double(n) * s.model.d_model * s.model.bytes_per_element;

  logs.assign(static_cast<size_t>(P * C), comm::RankLog{});
  double forward_flops = 0;
  for (int st = 0; st < P; ++st) forward_flops += M * costs.forward(st).flops;
  if (C == 1) {
    for (int st = 0; st < P; ++st) stage_program(s, costs, out, st, logs[size_t(st)], data);
  } else {
    PipelineContextProgram program(s, costs, *codec);
    for (int r = 0; r < P * C; ++r) program.append(r, logs[size_t(r)], data);
    out.uncompressed_kv_bytes = program.uncompressed_kv_bytes();
    out.kv_codec = program.kv_codec();
  }
  out.model_flops = 3.0 * forward_flops;  // the model's: the same however a stage's ranks split it
  return out;
}

PipelineStep build_pipeline_parallel(const Scenario& s) {
  // Each rank's program as a real run records it, then one assembly: the
  // dependencies are exactly the recorded graph's.
  std::vector<comm::RankLog> logs;
  PipelineStep out = pipeline_rank_logs(s, logs);
  std::vector<const comm::RankLog*> views;
  for (const auto& log : logs) views.push_back(&log);
  out.graph = comm::assemble_step_graph(views);
  if (!s.parallel.placement.empty()) out.graph = place_on_nodes(out.graph, Layout(s.parallel));
  return out;
}

}  // namespace lowband::parallel
