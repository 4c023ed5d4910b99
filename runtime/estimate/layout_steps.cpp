#include "runtime/estimate/layout_steps.h"

#include <algorithm>

#include "runtime/compress/make_codec.h"
#include "runtime/parallel/context/costs.h"
#include "runtime/parallel/context/step_graph.h"
#include "runtime/parallel/data/replicas.h"
#include "runtime/parallel/data/step_graph.h"
#include "runtime/parallel/layout.h"
#include "runtime/parallel/pipeline/step_graph.h"
#include "runtime/sync/sync_period.h"

namespace lowband::estimate_detail {

namespace {

// A context group's weight sync: the sparse one every c > 1 steps, then the
// step with the sync and the step between syncs.
template <class Build>
LayoutSteps weight_sync_steps(const Scenario& s, Build build) {
  LayoutSteps out;
  if (sync::sync_period_steps(s) > 1) out.periodic_sync = "sparse", out.period_steps = sync::sync_period_steps(s);
  for (bool weight_sync_step : {true, false}) {
    if (!weight_sync_step && out.periodic_sync.empty()) break;
    auto step = build(s, weight_sync_step);
    out.graphs.push_back(std::move(step.graph));
    out.tokens = step.tokens, out.model_flops = step.model_flops;
  }
  return out;
}

LayoutSteps context_steps(const Scenario& s) {
  return weight_sync_steps(s, [](const Scenario& one, bool sync) { return parallel::build_context_parallel(one, sync); });
}

LayoutSteps pipeline_steps(const Scenario& s) {
  return weight_sync_steps(s, [](const Scenario& one, bool sync) { return parallel::build_pipeline_parallel(one, sync); });
}

LayoutSteps data_steps(const Scenario& s) {
  const DataSyncConfig& sync = s.parallel.data_sync;
  LayoutSteps out;
  // With an outer sync the step between syncs too (H = 1 as well: what the sync
  // adds is their difference).
  if (sync.method != DataSyncMethod::all_reduce)
    out.periodic_sync = data_sync_method_name(sync.method), out.period_steps = sync::sync_period_steps(s);
  for (bool outer_sync : {true, false}) {
    if (!outer_sync && out.periodic_sync.empty()) break;
    parallel::DataStepGraph step = parallel::build_data_parallel(s, outer_sync);
    out.graphs.push_back(std::move(step.graph));
    out.tokens = step.tokens, out.model_flops = step.model_flops;
    out.replica_shapes = step.replica_shapes, out.part_message_bytes = step.part_message_bytes;
  }
  return out;
}

void add_codec(std::string& all, const std::string& codec) {  // the distinct ones, "; " between
  if (all.find(codec) == std::string::npos) all += (all.empty() ? "" : "; ") + codec;
}

}  // namespace

LayoutSteps build_layout_steps(const Scenario& s) {
  const parallel::LayoutKind kind = parallel::layout_kind(s.parallel);  // as LayoutTrainer composes its ranks
  LayoutSteps out = kind == parallel::LayoutKind::data       ? data_steps(s)
                    : kind == parallel::LayoutKind::pipeline ? pipeline_steps(s)
                                                             : context_steps(s);
  const double H = out.period_steps;  // the sync step once, the step between H − 1 times
  out.weights = out.graphs.size() > 1 ? std::vector<double>{1.0 / H, (H - 1.0) / H} : std::vector<double>{1.0};
  return out;
}

Uncompressed uncompressed_traffic(const Scenario& s) {
  std::vector<Scenario> replicas;
  if (parallel::layout_kind(s.parallel) != parallel::LayoutKind::data) replicas.push_back(s);
  else
    for (int q = 0; q < int(replica_shapes(s.parallel).size()); ++q) replicas.push_back(parallel::replica_scenario(s, q));
  Uncompressed out;
  for (const Scenario& one : replicas) {
    if (one.parallel.pipeline > 1) {
      const parallel::PipelineStep f = parallel::pipeline_step_figures(one);
      out.boundary_bytes += f.uncompressed_boundary_bytes * (one.parallel.pipeline - 1);
      add_codec(out.boundary_codec, f.boundary_codec);
      if (one.parallel.context > 1) out.kv_bytes += f.uncompressed_kv_bytes;
    } else if (one.parallel.context > 1) {
      out.kv_bytes += parallel::ContextCosts(one).uncompressed_kv_bytes();
    }
    if (one.parallel.context > 1) add_codec(out.kv_codec, compress::make_kv_codec(one)->describe());
  }
  return out;
}

}  // namespace lowband::estimate_detail
