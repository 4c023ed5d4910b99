#include "runtime/pipeline_estimate.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "runtime/estimate_format.h"
#include "runtime/parallel/layout.h"
#include "runtime/parallel/pipeline_graph.h"
#include "sim/replay.h"

namespace lowband {

namespace {

// The step with every transfer free: the longest chain of compute seconds (a
// stage's compute tasks are chained, so nothing shares a host). Dependencies
// always come earlier in the graph, so one pass in id order finds it.
double free_network_seconds(const sim::StepGraph& g) {
  std::vector<double> finish(g.tasks().size(), 0.0);
  double last = 0;
  for (size_t i = 0; i < g.tasks().size(); ++i) {
    const sim::Task& t = g.tasks()[i];
    double start = 0;
    for (sim::TaskId d : t.deps) start = std::max(start, finish[size_t(d)]);
    finish[i] = start + (t.kind == sim::TaskKind::compute ? t.seconds : 0.0);
    last = std::max(last, finish[i]);
  }
  return last;
}

const char* schedule_name(PipelineSchedule s) { return s == PipelineSchedule::gpipe ? "gpipe" : "1f1b"; }

}  // namespace

PipelineEstimate estimate_pipeline(const Scenario& s) {
  const parallel::PipelineStep step = parallel::build_pipeline_parallel(s);
  const int P = s.parallel.pipeline, M = s.parallel.microbatches;
  const auto start = std::chrono::steady_clock::now();
  const sim::ReplayResult r = sim::replay(s.network, step.graph);
  PipelineEstimate e;
  e.replay_wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  e.stages = P;
  e.microbatches = M;
  e.schedule = schedule_name(s.parallel.schedule);
  e.step_seconds = r.step_seconds;
  e.tokens_per_step = step.tokens;
  e.tokens_per_s = step.tokens / r.step_seconds;

  const parallel::Layout layout(s.parallel);
  double idle = 0;
  for (int st = 0; st < P; ++st) {
    const double busy = r.rank_compute_busy_seconds[size_t(layout.node_of(st))];
    e.compute_seconds = std::max(e.compute_seconds, busy);
    idle += r.step_seconds - busy;
    e.peak_flops_per_s += s.devices.for_node(layout.node_of(st)).peak_flops(s.devices.dtype);
  }
  e.bubble_fraction = idle / (P * r.step_seconds);
  e.ideal_bubble_fraction = double(P - 1) / double(M + P - 1);
  e.free_network_step_seconds = free_network_seconds(step.graph);
  e.exposed_comm_seconds = r.step_seconds - e.free_network_step_seconds;

  // What the network carries across each boundary, from the graph's transfers.
  std::map<std::pair<int, int>, BoundaryTraffic*> by_nodes;
  e.boundaries.resize(size_t(std::max(P - 1, 0)));
  for (int b = 0; b + 1 < P; ++b) {
    e.boundaries[size_t(b)].from_stage = b;
    by_nodes[{layout.node_of(b), layout.node_of(b + 1)}] = &e.boundaries[size_t(b)];
  }
  double sent = 0;
  for (const sim::Task& t : step.graph.tasks()) {
    if (t.kind != sim::TaskKind::transfer) continue;
    const bool forward = t.kind_tag == "act";
    if (!forward && t.kind_tag != "act_grad") continue;
    const auto it = forward ? by_nodes.find({t.rank, t.peer}) : by_nodes.find({t.peer, t.rank});
    if (it == by_nodes.end()) continue;
    (forward ? it->second->forward_bytes : it->second->backward_bytes) += t.bytes;
    sent += t.bytes;
  }
  const double plain = step.uncompressed_boundary_bytes * (P - 1);
  e.boundary_bytes_ratio = plain > 0 ? sent / plain : 1.0;
  e.boundary_codec = step.boundary_codec;
  e.model_flops_per_step = step.model_flops;
  e.mfu = e.model_flops_per_step / (e.step_seconds * e.peak_flops_per_s);
  e.network_model = sim::to_string(s.network.model);
  e.network = sim::describe(s.network);
  return e;
}

nlohmann::json to_json(const PipelineEstimate& e) {
  nlohmann::json boundaries = nlohmann::json::array();
  for (const BoundaryTraffic& b : e.boundaries)
    boundaries.push_back({{"stages", {b.from_stage, b.from_stage + 1}},
                          {"forward_bytes_per_step", b.forward_bytes},
                          {"backward_bytes_per_step", b.backward_bytes}});
  return {
      {"parallelism", "pipeline"},
      {"step_seconds", e.step_seconds},
      {"tokens_per_step", e.tokens_per_step},
      {"tokens_per_s", e.tokens_per_s},
      {"compute_seconds", e.compute_seconds},
      {"bubble_fraction", e.bubble_fraction},
      {"ideal_bubble_fraction", e.ideal_bubble_fraction},
      {"exposed_comm_seconds", e.exposed_comm_seconds},
      {"free_network_step_seconds", e.free_network_step_seconds},
      {"boundary_bytes", boundaries},
      {"boundary_bytes_ratio", e.boundary_bytes_ratio},
      {"boundary_codec", e.boundary_codec},
      {"model_flops_per_step", e.model_flops_per_step},
      {"peak_flops_per_s", e.peak_flops_per_s},
      {"mfu", e.mfu},
      {"stages", e.stages},
      {"microbatches", e.microbatches},
      {"schedule", e.schedule},
      {"network_model", e.network_model},
      {"network", e.network},
      {"replay_wall_seconds", e.replay_wall_seconds},
  };
}

std::string format_pipeline_table(const Scenario& s, const PipelineEstimate& e) {
  using estimate_format::fmt;
  using estimate_format::si;
  std::string out;
  auto row = [&out](const char* key, const std::string& value) { estimate_format::row(out, key, value); };
  const auto& p = s.parallel;
  row("scenario", s.name + (s.source.empty() ? "" : " (" + s.source + ")"));
  row("model", estimate_format::describe_model(s.model));
  std::string layers;
  for (int st = 0; st < p.pipeline; ++st)
    layers += (st ? "/" : "") + std::to_string(p.stage_layer_count(st, s.model.layers));
  row("pipeline parallel", std::to_string(e.stages) + " stages (" + layers + " layers), " + e.schedule + ", " +
                               std::to_string(e.microbatches) + " microbatches of " +
                               std::to_string(s.training.batch_size / e.microbatches) + " x " +
                               std::to_string(s.model.seq_len) + " tokens");
  row("boundary compression", e.boundary_codec);
  row("network", e.network);
  row("network model", e.network_model);
  row("devices", s.devices.default_profile.name + (s.devices.node_profiles.empty() ? "" : " (with per-node overrides)"));
  out += "\n";
  row("step", fmt("%.4g s", e.step_seconds));
  row("tokens/s", fmt("%.4g", e.tokens_per_s));
  row("compute", fmt("%.4g s", e.compute_seconds) + "  (busiest stage)");
  row("bubble", fmt("%.1f %%", 100.0 * e.bubble_fraction) + " of stage time idle" +
                    fmt("  (schedule alone: %.1f %%)", 100.0 * e.ideal_bubble_fraction));
  row("exposed comm", fmt("%.4g s", e.exposed_comm_seconds) +
                          fmt("  (step with free transfers: %.4g s)", e.free_network_step_seconds));
  if (!e.boundaries.empty()) {
    // Every boundary carries the same messages; show the first and say so.
    const BoundaryTraffic& b = e.boundaries.front();
    const bool same = std::all_of(e.boundaries.begin(), e.boundaries.end(), [&](const BoundaryTraffic& o) {
      return o.forward_bytes == b.forward_bytes && o.backward_bytes == b.backward_bytes;
    });
    row("per boundary/step", "act " + si(b.forward_bytes, "B") + ", act_grad " + si(b.backward_bytes, "B") +
                                 (same ? " (each of " + std::to_string(e.boundaries.size()) + " stage pairs)"
                                       : " (stages 0-1; others differ, see --json)"));
  }
  row("boundary bytes", fmt("%.4g of uncompressed", e.boundary_bytes_ratio) +
                            fmt(" (%.1f %% saved)", 100.0 * (1 - e.boundary_bytes_ratio)));
  row("model FLOPs/step", si(e.model_flops_per_step, "FLOP"));
  row("MFU", fmt("%.1f %%", 100.0 * e.mfu));
  row("replay", fmt("%.3g s wall", e.replay_wall_seconds));
  return out;
}

}  // namespace lowband
