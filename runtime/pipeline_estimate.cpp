#include "runtime/pipeline_estimate.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>

#include "runtime/estimate_format.h"
#include "runtime/parallel/layout.h"
#include "runtime/parallel/pipeline/step_graph.h"
#include "sim/replay.h"

namespace lowband {

namespace {

const char* schedule_name(PipelineSchedule s) { return s == PipelineSchedule::gpipe ? "gpipe" : "1f1b"; }

// `g` with the transfers of those kinds free: each becomes a zero-second task on
// its source (ids and dependencies unchanged).
sim::StepGraph without_transfers(const sim::StepGraph& g, const std::set<std::string>& kinds) {
  sim::StepGraph out(g.ranks());
  for (const sim::Task& t : g.tasks()) {
    if (t.kind == sim::TaskKind::compute) out.add_compute(t.rank, t.seconds, t.deps, t.kind_tag);
    else if (kinds.count(t.kind_tag)) out.add_compute(t.rank, 0.0, t.deps, t.kind_tag);
    else out.add_transfer(t.rank, t.peer, t.bytes, t.deps, t.kind_tag);
  }
  return out;
}

// Per rank (node), bytes sent of one kind per step: the most any rank sends.
double most_sent(const sim::StepGraph& g, const char* kind) {
  std::map<int, double> sent;
  for (const sim::Task& t : g.tasks())
    if (t.kind == sim::TaskKind::transfer && t.kind_tag == kind) sent[t.rank] += t.bytes;
  double most = 0;
  for (const auto& [rank, bytes] : sent) most = std::max(most, bytes);
  return most;
}

}  // namespace

// The step with every transfer free: the longest chain of compute seconds (a
// stage's compute tasks are chained, so nothing shares a host). Dependencies
// always come earlier in the graph, so one pass in id order finds it.
double free_network_step_seconds(const sim::StepGraph& g) {
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

PipelineEstimate estimate_pipeline(const Scenario& s) {
  const parallel::PipelineStep step = parallel::build_pipeline_parallel(s);
  const int P = s.parallel.pipeline, M = s.parallel.microbatches, C = step.context_ranks;
  // With context ranks, also the step with the K/V exchange free, with the
  // boundaries free and with the gradient sync free, in the same SimGrid run.
  std::vector<sim::StepGraph> graphs = {step.graph};
  if (C > 1)
    for (const std::set<std::string>& kinds : std::vector<std::set<std::string>>{
             {"kv", "dkv"}, {"act", "act_grad"}, {"grad_sync"}})
      graphs.push_back(without_transfers(step.graph, kinds));
  const auto start = std::chrono::steady_clock::now();
  const std::vector<sim::ReplayResult> replayed = sim::replay_batch(s.network, graphs);
  const sim::ReplayResult& r = replayed.front();
  PipelineEstimate e;
  e.replay_wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  e.stages = P;
  e.context_ranks = C;
  e.microbatches = M;
  e.schedule = schedule_name(s.parallel.schedule);
  e.step_seconds = r.step_seconds;
  e.tokens_per_step = step.tokens;
  e.tokens_per_s = step.tokens / r.step_seconds;

  const parallel::Layout layout(s.parallel);
  double idle = 0;
  for (int rank = 0; rank < P * C; ++rank) {
    const double busy = r.rank_compute_busy_seconds[size_t(layout.node_of(rank))];
    e.compute_seconds = std::max(e.compute_seconds, busy);
    idle += r.step_seconds - busy;
    e.peak_flops_per_s += s.devices.for_node(layout.node_of(rank)).peak_flops(s.devices.dtype);
  }
  e.bubble_fraction = idle / (P * C * r.step_seconds);
  e.ideal_bubble_fraction = double(P - 1) / double(M + P - 1);
  e.free_network_step_seconds = free_network_step_seconds(step.graph);
  e.exposed_comm_seconds = r.step_seconds - e.free_network_step_seconds;

  // What the network carries across each boundary (its C rank pairs (s, c) ->
  // (s + 1, c)), from the graph's transfers.
  std::map<std::pair<int, int>, BoundaryTraffic*> by_nodes;
  e.boundaries.resize(size_t(std::max(P - 1, 0)));
  for (int b = 0; b + 1 < P; ++b) {
    e.boundaries[size_t(b)].from_stage = b;
    for (int c = 0; c < C; ++c)
      by_nodes[{layout.node_of(b * C + c), layout.node_of((b + 1) * C + c)}] = &e.boundaries[size_t(b)];
  }
  double sent = 0, kv_sent = 0;
  for (const sim::Task& t : step.graph.tasks()) {
    if (t.kind != sim::TaskKind::transfer) continue;
    if (t.kind_tag == "kv" || t.kind_tag == "dkv") kv_sent += t.bytes;
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
  if (C > 1) {
    ContextTraffic& x = e.context;
    x.kv_bytes_per_rank = most_sent(step.graph, "kv");
    x.dkv_bytes_per_rank = most_sent(step.graph, "dkv");
    x.grad_sync_bytes_per_rank = most_sent(step.graph, "grad_sync");
    x.kv_bytes_ratio = step.uncompressed_kv_bytes > 0 ? kv_sent / step.uncompressed_kv_bytes : 1.0;
    x.kv_codec = step.kv_codec;
    x.exposed_kv_seconds = r.step_seconds - replayed[1].step_seconds;
    x.exposed_boundary_seconds = r.step_seconds - replayed[2].step_seconds;
    x.exposed_grad_sync_seconds = r.step_seconds - replayed[3].step_seconds;
  }
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
  nlohmann::json out = {
      {"parallelism", e.context_ranks > 1 ? "pipeline x context" : "pipeline"},
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
  if (e.context_ranks > 1) {
    const ContextTraffic& x = e.context;
    out["context_ranks"] = e.context_ranks;
    out["ranks"] = e.stages * e.context_ranks;
    out["kv_codec"] = x.kv_codec;
    out["bytes_per_rank_per_step"] = {{"kv", x.kv_bytes_per_rank},
                                      {"dkv", x.dkv_bytes_per_rank},
                                      {"grad_sync", x.grad_sync_bytes_per_rank}};
    out["kv_bytes_ratio"] = x.kv_bytes_ratio;
    out["exposed_kv_seconds"] = x.exposed_kv_seconds;
    out["exposed_boundary_seconds"] = x.exposed_boundary_seconds;
    out["exposed_grad_sync_seconds"] = x.exposed_grad_sync_seconds;
  }
  return out;
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
  const bool cp = e.context_ranks > 1;
  if (cp) {
    row("layout", std::to_string(e.stages) + " stages x " + std::to_string(e.context_ranks) + " context ranks (" +
                      std::to_string(e.stages * e.context_ranks) + " ranks, rank = stage x " +
                      std::to_string(e.context_ranks) + " + context rank)");
    row("context parallel", std::string(p.split == CpSplit::zigzag ? "zigzag" : "contiguous") + ", " +
                                (p.exchange == CpExchange::ring ? "ring" : "all_gather") +
                                (p.overlap ? ", overlapped" : ", not overlapped") + "; gradients all-reduced " +
                                "over each stage's context ranks every step");
    row("K/V compression", e.context.kv_codec);
  }
  row("boundary compression", e.boundary_codec);
  row("network", e.network);
  row("network model", e.network_model);
  row("devices", s.devices.default_profile.name + (s.devices.node_profiles.empty() ? "" : " (with per-node overrides)"));
  out += "\n";
  row("step", fmt("%.4g s", e.step_seconds));
  row("tokens/s", fmt("%.4g", e.tokens_per_s));
  row("compute", fmt("%.4g s", e.compute_seconds) + (cp ? "  (busiest rank)" : "  (busiest stage)"));
  row("bubble", fmt("%.1f %%", 100.0 * e.bubble_fraction) + (cp ? " of rank time idle" : " of stage time idle") +
                    fmt("  (schedule alone: %.1f %%)", 100.0 * e.ideal_bubble_fraction));
  row("exposed comm", fmt("%.4g s", e.exposed_comm_seconds) +
                          fmt("  (step with free transfers: %.4g s)", e.free_network_step_seconds));
  if (cp) {
    row("exposed by kind", fmt("K/V exchange %.4g s, ", e.context.exposed_kv_seconds) +
                               fmt("boundaries %.4g s, ", e.context.exposed_boundary_seconds) +
                               fmt("grad_sync %.4g s", e.context.exposed_grad_sync_seconds) +
                               "  (step minus the step with those transfers free)");
    row("sent per rank/step", "kv " + si(e.context.kv_bytes_per_rank, "B") + ", dkv " +
                                  si(e.context.dkv_bytes_per_rank, "B") + ", grad_sync " +
                                  si(e.context.grad_sync_bytes_per_rank, "B") + "  (the busiest rank)");
    row("K/V bytes", fmt("%.4g of uncompressed", e.context.kv_bytes_ratio) +
                         fmt(" (%.1f %% saved)", 100.0 * (1 - e.context.kv_bytes_ratio)));
  }
  if (!e.boundaries.empty()) {
    // Every boundary carries the same messages; show the first and say so.
    const BoundaryTraffic& b = e.boundaries.front();
    const bool same = std::all_of(e.boundaries.begin(), e.boundaries.end(), [&](const BoundaryTraffic& o) {
      return o.forward_bytes == b.forward_bytes && o.backward_bytes == b.backward_bytes;
    });
    row("per boundary/step", "act " + si(b.forward_bytes, "B") + ", act_grad " + si(b.backward_bytes, "B") +
                                 (same ? " (each of " + std::to_string(e.boundaries.size()) + " stage pairs)"
                                       : " (stages 0-1; others differ, see --json)") +
                                 (cp ? ", over its " + std::to_string(e.context_ranks) + " rank pairs" : ""));
  }
  row("boundary bytes", fmt("%.4g of uncompressed", e.boundary_bytes_ratio) +
                            fmt(" (%.1f %% saved)", 100.0 * (1 - e.boundary_bytes_ratio)));
  row("model FLOPs/step", si(e.model_flops_per_step, "FLOP"));
  row("MFU", fmt("%.1f %%", 100.0 * e.mfu));
  row("replay", fmt("%.3g s wall", e.replay_wall_seconds));
  return out;
}

}  // namespace lowband
