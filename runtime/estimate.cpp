#include "runtime/estimate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "runtime/cost_model.h"
#include "runtime/estimate_format.h"
#include "runtime/parallel/context/step_graph.h"
#include "runtime/parallel/layout.h"
#include "sim/replay.h"

namespace lowband {

namespace {

// One replayed graph's figures per rank, to be averaged over the sync period.
struct StepFigures {
  double step_seconds = 0, exposed_comm_seconds = 0;
  std::vector<double> compute_seconds;
  std::vector<std::map<std::string, double>> bytes;  // per rank, per kind
  double kv_bytes = 0, uncompressed_kv_bytes = 0;    // all ranks
  double model_flops = 0, tokens = 0, wall_seconds = 0;
};

StepFigures figures_of(const parallel::ContextStep& step, const sim::StepGraph& graph,
                       const sim::ReplayResult& replayed, double wall_seconds) {
  StepFigures f;
  f.wall_seconds = wall_seconds;
  f.step_seconds = replayed.step_seconds;
  f.exposed_comm_seconds = replayed.exposed_comm_seconds;
  f.compute_seconds = replayed.rank_compute_busy_seconds;
  // One pass over the transfers (StepGraph::bytes_sent scans the graph per call).
  const int P = graph.ranks();
  f.bytes.resize(P);
  for (int r = 0; r < P; ++r)
    for (const char* kind : {"kv", "dkv", "grad_sync", "total"}) f.bytes[r][kind] = 0;
  for (const sim::Task& t : graph.tasks()) {
    if (t.kind != sim::TaskKind::transfer || t.peer == t.rank) continue;
    f.bytes[t.rank][t.kind_tag] += t.bytes;
    f.bytes[t.rank]["total"] += t.bytes;
    if (t.kind_tag == "kv" || t.kind_tag == "dkv") f.kv_bytes += t.bytes;
  }
  f.uncompressed_kv_bytes = step.uncompressed_kv_bytes;
  f.model_flops = step.model_flops;
  f.tokens = step.tokens;
  return f;
}

// Replays the step with the weight sync, and (sparse sync every c > 1 steps) the
// step without it, in one SimGrid run.
std::vector<StepFigures> replay_steps(const Scenario& s, bool also_without_sync) {
  std::vector<parallel::ContextStep> steps;
  for (bool with_sync : {true, false}) {
    if (!with_sync && !also_without_sync) break;
    steps.push_back(parallel::build_context_parallel(s, with_sync));
  }
  std::vector<sim::StepGraph> graphs;
  for (auto& step : steps) graphs.push_back(std::move(step.graph));
  const auto start = std::chrono::steady_clock::now();
  const std::vector<sim::ReplayResult> replayed = sim::replay_batch(s.network, graphs);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<StepFigures> figures;
  for (size_t i = 0; i < steps.size(); ++i)
    figures.push_back(figures_of(steps[i], graphs[i], replayed[i], wall / steps.size()));
  return figures;
}

}  // namespace

EstimateResult estimate(const Scenario& s) {
  const auto& c = s.compression;
  const bool sparse = c.weight_sync == WeightSync::sparse && c.sync_every > 1;
  const std::vector<StepFigures> steps = replay_steps(s, sparse);
  // Weight of each replayed graph in the average over one sync period.
  const std::vector<double> weights =
      sparse ? std::vector<double>{1.0 / c.sync_every, (c.sync_every - 1.0) / c.sync_every}
             : std::vector<double>{1.0};

  EstimateResult e;
  const int P = s.parallel.context;
  e.ranks = P;
  // The graphs are on the ranks' nodes (parallel.placement): rank r's figures are its node's.
  const parallel::Layout layout(s.parallel);
  std::vector<double> compute(P, 0.0);
  std::vector<std::map<std::string, double>> bytes(P);
  double kv = 0, kv_plain = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepFigures& f = steps[i];
    const double w = weights[i];
    e.step_seconds += w * f.step_seconds;
    e.exposed_comm_seconds += w * f.exposed_comm_seconds;
    for (int r = 0; r < P; ++r) {
      const size_t node = size_t(layout.node_of(r));
      compute[r] += w * f.compute_seconds[node];
      for (const auto& [kind, b] : f.bytes[node]) bytes[r][kind] += w * b;
    }
    kv += w * f.kv_bytes;
    kv_plain += w * f.uncompressed_kv_bytes;
    e.replay_wall_seconds += f.wall_seconds;
  }
  e.steps_averaged = static_cast<int>(steps.size());
  e.compute_seconds = *std::max_element(compute.begin(), compute.end());
  for (int r = 0; r < P; ++r)
    for (const auto& [kind, b] : bytes[r])
      e.bytes_per_rank_per_step[kind] = std::max(e.bytes_per_rank_per_step[kind], b);
  e.tokens_per_step = steps[0].tokens;
  e.tokens_per_s = e.tokens_per_step / e.step_seconds;
  e.model_flops_per_step = steps[0].model_flops;
  for (int r = 0; r < P; ++r) e.peak_flops_per_s += s.devices.for_node(layout.node_of(r)).peak_flops(s.devices.dtype);
  e.mfu = e.model_flops_per_step / (e.step_seconds * e.peak_flops_per_s);
  e.kv_bytes_ratio = kv_plain > 0 ? kv / kv_plain : 1.0;
  e.kv_bytes_saved_fraction = 1.0 - e.kv_bytes_ratio;
  e.network_model = sim::to_string(s.network.model);
  e.network = sim::describe(s.network);
  return e;
}

nlohmann::json to_json(const EstimateResult& e) {
  return {
      {"step_seconds", e.step_seconds},
      {"tokens_per_step", e.tokens_per_step},
      {"tokens_per_s", e.tokens_per_s},
      {"compute_seconds", e.compute_seconds},
      {"exposed_comm_seconds", e.exposed_comm_seconds},
      {"bytes_per_rank_per_step", e.bytes_per_rank_per_step},
      {"model_flops_per_step", e.model_flops_per_step},
      {"peak_flops_per_s", e.peak_flops_per_s},
      {"mfu", e.mfu},
      {"kv_bytes_ratio", e.kv_bytes_ratio},
      {"kv_bytes_saved_fraction", e.kv_bytes_saved_fraction},
      {"ranks", e.ranks},
      {"network_model", e.network_model},
      {"network", e.network},
      {"replay_wall_seconds", e.replay_wall_seconds},
      {"steps_averaged", e.steps_averaged},
  };
}

std::string format_estimate_table(const Scenario& s, const EstimateResult& e) {
  using estimate_format::fmt;
  using estimate_format::si;
  const auto& m = s.model;
  const auto& p = s.parallel;
  const auto& c = s.compression;
  std::string out;
  auto row = [&out](const char* key, const std::string& value) { estimate_format::row(out, key, value); };
  row("scenario", s.name + (s.source.empty() ? "" : " (" + s.source + ")"));
  row("model", estimate_format::describe_model(m));
  row("context parallel", std::to_string(m.seq_len) + " tokens x " + std::to_string(s.training.batch_size) +
                              " seq over " + std::to_string(p.context) + " ranks, " +
                              (p.split == CpSplit::zigzag ? "zigzag" : "contiguous") + ", " +
                              (p.exchange == CpExchange::ring ? "ring" : "all_gather") +
                              (p.overlap ? ", overlapped" : ", not overlapped"));
  std::string compression = "none";
  if (c.method == CompressionMethod::mos)
    compression = "mos, K rank " + std::to_string(c.k_rank(m.head_dim())) + ", V rank " +
                  std::to_string(c.v_rank(m.head_dim())) + " of " + std::to_string(m.head_dim());
  row("compression", compression);
  const std::string every =
      c.sync_every == 1 ? std::string(" every step") : " every " + std::to_string(c.sync_every) + " steps";
  row("weight sync", c.weight_sync == WeightSync::all_reduce ? std::string("ring all-reduce every step")
                     : c.weight_sync == WeightSync::sparse
                         ? fmt("sparse, %.3g of the weights", c.sync_fraction) + every
                         : std::string(weight_sync_name(c.weight_sync)) +
                               fmt(", fraction %.3g with error feedback", c.sync_fraction) + every);
  row("network", e.network);
  row("network model", e.network_model);
  row("devices", s.devices.default_profile.name + (s.devices.node_profiles.empty() ? "" : " (with per-node overrides)"));
  out += "\n";
  row("step", fmt("%.4g s", e.step_seconds) + (e.steps_averaged > 1 ? "  (average over the sync period)" : ""));
  row("tokens/s", fmt("%.4g", e.tokens_per_s));
  row("compute", fmt("%.4g s", e.compute_seconds) + "  (busiest rank)");
  row("exposed comm", fmt("%.4g s", e.exposed_comm_seconds));
  std::string sent;
  for (const char* kind : {"kv", "dkv", "grad_sync", "total"}) {
    const auto it = e.bytes_per_rank_per_step.find(kind);
    if (it == e.bytes_per_rank_per_step.end()) continue;
    sent += (sent.empty() ? "" : ", ") + std::string(kind) + " " + si(it->second, "B");
  }
  row("sent per rank/step", sent);
  row("K/V bytes", fmt("%.4g of uncompressed", e.kv_bytes_ratio) +
                       fmt(" (%.1f %% saved)", 100.0 * e.kv_bytes_saved_fraction));
  row("model FLOPs/step", si(e.model_flops_per_step, "FLOP"));
  row("MFU", fmt("%.1f %%", 100.0 * e.mfu));
  row("replay", fmt("%.3g s wall", e.replay_wall_seconds));
  return out;
}

}  // namespace lowband
