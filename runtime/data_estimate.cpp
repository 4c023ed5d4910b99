#include "runtime/data_estimate.h"

#include <algorithm>
#include <chrono>

#include "runtime/estimate_format.h"
#include "runtime/parallel/data/step_graph.h"
#include "runtime/parallel/layout.h"
#include "runtime/pipeline_estimate.h"
#include "sim/replay.h"

namespace lowband {

namespace {

// Per node, bytes sent by kind and "total".
std::vector<std::map<std::string, double>> sent_by_node(const sim::StepGraph& g) {
  std::vector<std::map<std::string, double>> out(static_cast<size_t>(g.ranks()));
  for (const sim::Task& t : g.tasks()) {
    if (t.kind != sim::TaskKind::transfer || t.peer == t.rank) continue;
    out[size_t(t.rank)][t.kind_tag] += t.bytes;
    out[size_t(t.rank)]["total"] += t.bytes;
  }
  return out;
}

std::map<std::string, double> most(const std::vector<std::map<std::string, double>>& per_node) {
  std::map<std::string, double> out;
  for (const auto& node : per_node)
    for (const auto& [kind, b] : node) out[kind] = std::max(out[kind], b);
  return out;
}

}  // namespace

DataEstimate estimate_data(const Scenario& s) {
  const DataSyncConfig& sync = s.parallel.data_sync;
  const bool outer = sync.method != DataSyncMethod::all_reduce;
  const int H = outer ? std::max(1, sync.inner_steps) : 1;
  // The sync step; with an outer sync the inner step too (H = 1 as well: what
  // the sync adds is their difference).
  std::vector<parallel::DataStepGraph> steps;
  steps.push_back(parallel::build_data_parallel(s, /*outer_sync=*/true));
  if (outer) steps.push_back(parallel::build_data_parallel(s, /*outer_sync=*/false));
  std::vector<sim::StepGraph> graphs;
  for (const auto& st : steps) graphs.push_back(st.graph);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<sim::ReplayResult> replayed = sim::replay_batch(s.network, graphs);
  DataEstimate e;
  e.replay_wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const parallel::DataStepGraph& first = steps.front();
  e.method = data_sync_method_name(sync.method);
  e.inner_steps = H;
  e.replica_shapes = first.replica_shapes;
  e.replicas = int(first.replica_shapes.size());
  e.ranks = s.parallel.ranks();
  e.sync_step_seconds = replayed[0].step_seconds;
  e.inner_step_seconds = replayed.back().step_seconds;
  e.comm_per_sync_seconds = e.sync_step_seconds - e.inner_step_seconds;
  // Weights over the period: the sync step once, the inner step H − 1 times.
  const std::vector<double> w = replayed.size() > 1 ? std::vector<double>{1.0 / H, (H - 1.0) / H} : std::vector<double>{1.0};
  std::vector<std::map<std::string, double>> per_node(static_cast<size_t>(graphs[0].ranks()));
  const parallel::Layout layout(s.parallel);
  e.relay_node = layout.relay_node();
  // The relay's node runs no rank: what it sends is not a rank's.
  auto without_relay = [&](std::vector<std::map<std::string, double>> sent) {
    if (e.relay_node >= 0 && size_t(e.relay_node) < sent.size()) {
      e.relay_bytes_per_sync = std::max(e.relay_bytes_per_sync, sent[size_t(e.relay_node)]["total"]);
      sent[size_t(e.relay_node)].clear();
    }
    return sent;
  };
  for (size_t i = 0; i < graphs.size(); ++i) {
    e.step_seconds += w[i] * replayed[i].step_seconds;
    e.compute_seconds += w[i] * free_network_step_seconds(graphs[i]);
    const auto sent = without_relay(sent_by_node(graphs[i]));
    for (size_t n = 0; n < sent.size(); ++n)
      for (const auto& [kind, b] : sent[n]) per_node[n][kind] += w[i] * b;
  }
  e.bytes_per_rank_per_step = most(per_node);
  e.bytes_per_rank_per_sync = most(without_relay(sent_by_node(graphs[0])));
  e.exposed_comm_seconds = e.step_seconds - e.compute_seconds;
  e.compute_utilisation = e.compute_seconds / e.step_seconds;
  e.tokens_per_step = first.tokens;
  e.tokens_per_s = first.tokens / e.step_seconds;
  e.part_message_bytes = first.part_message_bytes;
  for (double b : first.part_message_bytes) e.message_bytes_per_replica += b;
  e.model_flops_per_step = first.model_flops;
  for (int r = 0; r < layout.ranks(); ++r) e.peak_flops_per_s += s.devices.for_node(layout.node_of(r)).peak_flops(s.devices.dtype);
  e.mfu = e.model_flops_per_step / (e.step_seconds * e.peak_flops_per_s);
  e.network_model = sim::to_string(s.network.model);
  e.network = sim::describe(s.network);
  return e;
}

nlohmann::json to_json(const DataEstimate& e) {
  return {
      {"parallelism", "data"},
      {"data_sync", e.method},
      {"inner_steps", e.inner_steps},
      {"replicas", e.replicas},
      {"replica_shapes", e.replica_shapes},
      {"ranks", e.ranks},
      {"step_seconds", e.step_seconds},
      {"tokens_per_step", e.tokens_per_step},
      {"tokens_per_s", e.tokens_per_s},
      {"inner_step_seconds", e.inner_step_seconds},
      {"sync_step_seconds", e.sync_step_seconds},
      {"comm_per_sync_seconds", e.comm_per_sync_seconds},
      {"compute_seconds", e.compute_seconds},
      {"exposed_comm_seconds", e.exposed_comm_seconds},
      {"compute_utilisation", e.compute_utilisation},
      {"bytes_per_rank_per_step", e.bytes_per_rank_per_step},
      {"bytes_per_rank_per_sync", e.bytes_per_rank_per_sync},
      {"message_bytes_per_replica", e.message_bytes_per_replica},
      {"part_message_bytes", e.part_message_bytes},
      {"exchange", e.relay_node >= 0 ? "relay" : e.method == "sparseloco" ? "all_gather" : "all_reduce"},
      {"relay_node", e.relay_node >= 0 ? nlohmann::json(e.relay_node) : nlohmann::json()},
      {"relay_bytes_per_sync", e.relay_bytes_per_sync},
      {"model_flops_per_step", e.model_flops_per_step},
      {"peak_flops_per_s", e.peak_flops_per_s},
      {"mfu", e.mfu},
      {"network_model", e.network_model},
      {"network", e.network},
      {"replay_wall_seconds", e.replay_wall_seconds},
  };
}

std::string format_data_table(const Scenario& s, const DataEstimate& e) {
  using estimate_format::fmt;
  using estimate_format::si;
  std::string out;
  auto row = [&out](const char* key, const std::string& value) { estimate_format::row(out, key, value); };
  row("scenario", s.name + (s.source.empty() ? "" : " (" + s.source + ")"));
  row("model", estimate_format::describe_model(s.model));
  std::string shapes;  // runs of alike replicas: "0-1: 1 node; 2-3: 2 stages"
  for (size_t q = 0, end = 0; q < e.replica_shapes.size(); q = end) {
    for (end = q + 1; end < e.replica_shapes.size() && e.replica_shapes[end] == e.replica_shapes[q];) ++end;
    shapes += (q ? "; " : "") + std::to_string(q) + (end - q > 1 ? "-" + std::to_string(end - 1) : "") + ": " +
              e.replica_shapes[q];
  }
  row("data parallel", std::to_string(e.replicas) + " replicas (" + shapes + "), " + std::to_string(e.ranks) +
                           " ranks, " + std::to_string(s.training.batch_size / std::max(1, e.replicas)) +
                           " sequences each");
  const DataSyncConfig& d = s.parallel.data_sync;
  std::string sync = "gradient all-reduce every step";
  if (e.method == "diloco") sync = "diloco every " + std::to_string(e.inner_steps) + " steps (float32 pseudo-gradient all-reduce)";
  if (e.method == "sparseloco")
    sync = "sparseloco every " + std::to_string(e.inner_steps) + " steps (top-" + std::to_string(d.topk_per_chunk) +
           " of " + std::to_string(d.chunk) + ", " + std::to_string(d.value_bits) + "-bit values, " +
           (e.relay_node >= 0 ? "through the relay on node " + std::to_string(e.relay_node) : std::string("all-gather")) + ")";
  row("data sync", sync);
  row("network", e.network);
  row("network model", e.network_model);
  row("devices", s.devices.default_profile.name + (s.devices.node_profiles.empty() ? "" : " (with per-node overrides)"));
  out += "\n";
  row("step", fmt("%.4g s", e.step_seconds) + (e.inner_steps > 1 ? "  (average over the sync period)" : ""));
  if (e.method != "all_reduce") {
    row("inner / sync step", fmt("%.4g s / ", e.inner_step_seconds) + fmt("%.4g s", e.sync_step_seconds));
    row("comm per sync", fmt("%.4g s", e.comm_per_sync_seconds) + "  (sync step minus inner step)");
    row("message/replica/sync", si(e.message_bytes_per_replica, "B") + fmt("  (%.4g x parameters)",
                                                                           e.message_bytes_per_replica / s.model.parameters()));
  }
  row("tokens/s", fmt("%.4g", e.tokens_per_s));
  row("compute", fmt("%.4g s", e.compute_seconds) + "  (step with free transfers)");
  row("exposed comm", fmt("%.4g s", e.exposed_comm_seconds));
  row("compute utilisation", fmt("%.1f %%", 100.0 * e.compute_utilisation));
  std::string per_step, per_sync;
  for (const auto& [kind, b] : e.bytes_per_rank_per_step) per_step += (per_step.empty() ? "" : ", ") + kind + " " + si(b, "B");
  for (const auto& [kind, b] : e.bytes_per_rank_per_sync) per_sync += (per_sync.empty() ? "" : ", ") + kind + " " + si(b, "B");
  row("sent per rank/step", per_step + "  (the busiest node)");
  if (e.method != "all_reduce") row("sent per rank/sync", per_sync + "  (the sync step)");
  if (e.relay_node >= 0) row("relay sent/sync", si(e.relay_bytes_per_sync, "B") + "  (every message to the other replicas)");
  row("model FLOPs/step", si(e.model_flops_per_step, "FLOP"));
  row("MFU", fmt("%.1f %%", 100.0 * e.mfu));
  row("replay", fmt("%.3g s wall", e.replay_wall_seconds));
  return out;
}

}  // namespace lowband
