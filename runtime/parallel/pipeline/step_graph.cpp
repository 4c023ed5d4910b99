#include "runtime/parallel/pipeline/step_graph.h"

#include <string>

#include "comm/recording.h"
#include "common/error.h"
#include "runtime/compress/boundary_codec.h"
#include "runtime/compress/make_codec.h"
#include "runtime/parallel/dry_run.h"
#include "runtime/parallel/layout.h"
#include "runtime/parallel/pipeline/costs.h"
#include "runtime/scenario/layout_check.h"

namespace lowband::parallel {

namespace {

void validate(const Scenario& s) {
  if (s.model.seq_len < 1) throw InputError("model.seq_len", "must be at least 1");
  if (s.training.batch_size < 1) throw InputError("training.batch_size", "must be at least 1");
  const int P = s.parallel.pipeline, C = s.parallel.context;
  if (s.network.nodes < P * C)
    throw InputError("network.nodes", std::to_string(s.network.nodes) + " nodes for " + std::to_string(P) +
                                          " pipeline stages" +
                                          (C > 1 ? " x " + std::to_string(C) + " context ranks" : ""));
  check_layout(s);  // a tied embedding, a weight sync with nothing to sync
}

}  // namespace

PipelineStep pipeline_step_figures(const Scenario& s) {
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
  double forward_flops = 0;
  for (int st = 0; st < P; ++st) forward_flops += M * costs.forward(st).flops;
  out.model_flops = 3.0 * forward_flops;  // the model's: the same however a stage's ranks split it
  if (C > 1) {
    out.uncompressed_kv_bytes = costs.context().uncompressed_kv_bytes() * M;  // per microbatch, M of them
    out.kv_codec = compress::make_kv_codec(s)->describe();
  }
  return out;
}

PipelineStep build_pipeline_parallel(const Scenario& s, bool weight_sync_step) {
  // Each rank's own program (PipelineRank) run dry, then one assembly, as a
  // recorded step is assembled.
  PipelineStep out = pipeline_step_figures(s);
  const int N = s.parallel.pipeline * s.parallel.context;
  DryGroup world;  // the replica: communicator 0
  for (int r = 0; r < N; ++r) world.ranks.push_back(r);
  std::vector<comm::RankLog> logs(static_cast<size_t>(N));
  for (int r = 0; r < N; ++r) dry_pipeline_rank(s, r, steady_step(s, weight_sync_step), world, logs[size_t(r)]);
  std::vector<const comm::RankLog*> views;
  for (const auto& log : logs) views.push_back(&log);
  out.graph = comm::assemble_step_graph(views, s.parallel.all_reduce);
  if (!s.parallel.placement.empty()) out.graph = place_on_nodes(out.graph, Layout(s.parallel));
  return out;
}

}  // namespace lowband::parallel
