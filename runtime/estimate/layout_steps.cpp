#include "runtime/estimate/layout_steps.h"

#include <string>

#include "runtime/model/param_layout.h"
#include "runtime/parallel/context/costs.h"
#include "runtime/parallel/data/replicas.h"
#include "runtime/parallel/dry_steps.h"
#include "runtime/parallel/layout.h"
#include "runtime/parallel/pipeline/costs.h"
#include "runtime/parallel/trainer.h"
#include "runtime/sync/outer_sync.h"
#include "runtime/sync/sync_period.h"

namespace lowband::estimate_detail {

namespace {

// The scenario each replica runs: the scenario itself where there is one.
std::vector<Scenario> replicas_of(const Scenario& s) {
  if (parallel::layout_kind(s.parallel) != parallel::LayoutKind::data) return {s};
  std::vector<Scenario> out;
  for (int q = 0; q < int(replica_shapes(s.parallel).size()); ++q) out.push_back(parallel::replica_scenario(s, q));
  return out;
}

std::string describe(const Scenario& one) {
  const ParallelConfig& p = one.parallel;
  const std::string context = std::to_string(p.context) + " context ranks";
  if (p.pipeline == 1) return p.context > 1 ? context : "1 node";
  return std::to_string(p.pipeline) + " stages" + (p.context > 1 ? " x " + context : "") +
         (one.compression.boundary.method != BoundaryMethod::none ? ", boundaries compressed" : "");
}

void add_codec(std::string& all, const std::string& codec) {  // the distinct ones, "; " between
  if (!codec.empty() && all.find(codec) == std::string::npos) all += (all.empty() ? "" : "; ") + codec;
}

}  // namespace

LayoutSteps build_layout_steps(const Scenario& s) {
  LayoutSteps out;
  const bool data = parallel::layout_kind(s.parallel) == parallel::LayoutKind::data;
  const DataSyncConfig& sync = s.parallel.data_sync;
  // An outer sync (diloco, sparseloco: H = 1 too, what the sync adds being the
  // difference) or the sparse weight sync every c > 1 steps: the step that syncs
  // and the step between, both the trainer's own run dry.
  if (data && sync.method != DataSyncMethod::all_reduce) out.periodic_sync = data_sync_method_name(sync.method);
  else if (!data && sync::sync_period_steps(s) > 1) out.periodic_sync = "sparse";
  out.period_steps = sync::sync_period_steps(s);
  out.graphs = parallel::steady_sync_graphs(s);
  out.sync_graphs = int(out.graphs.size());
  if (!out.periodic_sync.empty()) out.graphs.push_back(parallel::steady_step_graph(s, /*sync_step=*/false));
  // Each sync step (or window) once, the step between for the period's other steps.
  const double H = out.period_steps;
  double sync_steps = 0;
  for (int i = 0; i < out.sync_graphs; ++i) {
    out.weights.push_back(out.periodic_sync.empty() ? 1.0 : 1.0 / H);
    sync_steps += out.graphs[size_t(i)].steps();
  }
  if (!out.periodic_sync.empty()) out.weights.push_back((H - sync_steps) / H);
  out.windows = sync::outer_syncs(s) && sync.delay_steps > 0;
  if (out.periodic_sync.empty() || out.periodic_sync == "sparse") {
    out.sync_offsets = {out.period_steps - 1};
  } else {
    for (int f = 1; f <= sync.fragments; ++f) {  // steady_sync_graphs' order
      const int issue = (sync::fragment_shift_steps(sync, f % sync.fragments) + sync.inner_steps - 1) % sync.inner_steps;
      out.sync_offsets.push_back(sync.delay_steps == 0 ? issue : (issue + 1) % sync.inner_steps);
    }
  }
  out.tokens = double(s.training.batch_size) * double(s.model.seq_len);
  for (const Scenario& one : replicas_of(s)) {
    out.model_flops += one.parallel.pipeline > 1 ? parallel::pipeline_step_figures(one).model_flops
                                                 : parallel::ContextCosts(one).step_model_flops();
    if (data) out.replica_shapes.push_back(describe(one));
  }
  if (data && sync.method != DataSyncMethod::all_reduce)
    for (const parallel::ModelPart& part : parallel::replica_parts(s))
      out.part_message_bytes.push_back(double(sync::OuterSync::message_bytes(sync, model::ParamLayout(s.model, part.span()))));
  return out;
}

Uncompressed uncompressed_traffic(const Scenario& s) {
  Uncompressed out;
  for (const Scenario& one : replicas_of(s)) {
    const parallel::CompressedTraffic t = parallel::compressed_traffic_of(one);
    out.kv_bytes += t.uncompressed_kv_bytes, out.boundary_bytes += t.uncompressed_boundary_bytes;
    add_codec(out.kv_codec, t.kv_codec), add_codec(out.boundary_codec, t.boundary_codec);
  }
  return out;
}

}  // namespace lowband::estimate_detail
