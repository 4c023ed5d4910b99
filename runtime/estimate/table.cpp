#include <algorithm>
#include <cmath>
#include <cstdio>

#include "runtime/estimate/estimate.h"

namespace lowband {

namespace {

std::string si(double value, const char* unit) {  // 1.23 G<unit>
  const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::abs(value) >= 1000 && i < 6) value /= 1000, ++i;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g %s%s", value, prefixes[i], unit);
  return buf;
}

std::string fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

void add_row(std::string& out, const std::string& key, const std::string& value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%-22s", key.c_str());
  out += buf + value + "\n";
}

std::string bytes_by_kind(const std::map<std::string, double>& bytes) {  // "act 1 MB, ..., total 3 MB"
  std::string out;
  for (const auto& [kind, b] : bytes)
    if (kind != "total") out += kind + " " + si(b, "B") + ", ";
  return out + "total " + si(bytes.count("total") ? bytes.at("total") : 0.0, "B");
}

std::string describe_layout(const Scenario& s, const Estimate& e) {
  const int C = e.context ? e.context->context_ranks : 1;
  if (e.data) {
    std::string shapes;  // runs of alike replicas: "0-1: 1 node; 2-3: 2 stages"
    const std::vector<std::string>& r = e.data->replica_shapes;
    for (size_t q = 0, end = 0; q < r.size(); q = end) {
      for (end = q + 1; end < r.size() && r[end] == r[q];) ++end;
      shapes += (q ? "; " : "") + std::to_string(q) + (end - q > 1 ? "-" + std::to_string(end - 1) : "") + ": " + r[q];
    }
    return "data parallel, " + std::to_string(e.data->replicas) + " replicas (" + shapes + "), " +
           std::to_string(e.ranks) + " ranks, " + std::to_string(s.training.batch_size / std::max(1, e.data->replicas)) +
           " sequences each";
  }
  if (!e.pipeline) return "context parallel, " + std::to_string(C) + " ranks";
  const std::string P = std::to_string(e.pipeline->stages);
  if (C == 1) return "pipeline parallel, " + P + " stages";
  return "pipeline x context, " + P + " stages x " + std::to_string(C) + " context ranks (" + std::to_string(e.ranks) +
         " ranks, rank = stage x " + std::to_string(C) + " + context rank)";
}

std::string describe_sync(const Scenario& s, const Estimate& e) {
  const CompressionConfig& c = s.compression;
  if (e.data) {
    const DataSyncConfig& d = s.parallel.data_sync;
    const std::string every = e.sync ? " every " + std::to_string(e.sync->inner_steps) + " steps" : "";
    if (d.method == DataSyncMethod::diloco) return "diloco" + every + " (float32 pseudo-gradient all-reduce)";
    if (d.method == DataSyncMethod::all_reduce) return "gradient all-reduce every step";
    return "sparseloco" + every + " (top-" + std::to_string(d.topk_per_chunk) + " of " + std::to_string(d.chunk) +
           ", " + std::to_string(d.value_bits) + "-bit values, " +
           (e.sync->relay_node >= 0 ? "through the relay on node " + std::to_string(e.sync->relay_node) : "all-gather") + ")";
  }
  const std::string every = c.sync_every == 1 ? std::string(" every step") : " every " + std::to_string(c.sync_every) + " steps";
  if (c.weight_sync == WeightSync::all_reduce) return "ring all-reduce every step";
  if (c.weight_sync == WeightSync::sparse) return fmt("sparse, %.3g of the weights", c.sync_fraction) + every;
  return std::string(weight_sync_name(c.weight_sync)) + fmt(", fraction %.3g with error feedback", c.sync_fraction) + every;
}

void scenario_block(const Scenario& s, const Estimate& e, std::string& out) {
  auto row = [&out](const std::string& key, const std::string& value) { add_row(out, key, value); };
  const ModelConfig& m = s.model;
  const ParallelConfig& p = s.parallel;
  row("scenario", s.name + (s.source.empty() ? "" : " (" + s.source + ")"));
  row("model", std::to_string(m.layers) + " layers, d_model " + std::to_string(m.d_model) + ", " +
                   std::to_string(m.heads) + " heads (" + std::to_string(m.kv_heads) + " kv), ffn " +
                   std::to_string(m.ffn_hidden) + ", vocab " + std::to_string(m.vocab) + ", " + si(m.parameters(), "params"));
  row("layout", describe_layout(s, e));
  if (e.context)
    row("context ranks", std::to_string(m.seq_len) + " tokens x " + std::to_string(s.training.batch_size) + " seq, " +
                             word_of(cp_split_words(), p.split) + ", " +
                             word_of(cp_exchange_words(), p.exchange) +
                             (p.overlap ? ", overlapped" : ", not overlapped") +
                             (e.context->sequences_in_flight > 1
                                  ? ", " + std::to_string(e.context->sequences_in_flight) + " in flight per rank"
                                  : "") +
                             "; K/V " + e.context->kv_codec);
  if (e.context && e.context->kv_ranks) row("K/V ranks", compress::describe(*e.context->kv_ranks));
  if (e.pipeline) {
    const int replicas = e.data ? std::max(1, e.data->replicas) : 1;
    std::string layers;  // the layout's own stages (a data layout's replicas say theirs above)
    for (int st = 0; !e.data && st < p.pipeline; ++st) layers += (st ? "/" : " (") + std::to_string(p.stage_layer_count(st, m.layers));
    row("pipeline stages", std::to_string(e.pipeline->stages) + " stages" + (layers.empty() ? "" : layers + " layers)") +
                               ", " + e.pipeline->schedule + ", " + std::to_string(e.pipeline->microbatches) +
                               " microbatches of " + std::to_string(s.training.batch_size / replicas / e.pipeline->microbatches) +
                               " x " + std::to_string(m.seq_len) + " tokens; boundaries " + e.pipeline->boundary_codec);
  }
  // A pipeline's stages sync weights over their context ranks (C = 1: nothing to sync).
  if (e.data || !e.pipeline || e.context) row(e.data ? "data sync" : "weight sync", describe_sync(s, e));
  row("network", e.network);
  row("network model", e.network_model);
  row("devices", s.devices.default_profile.name + (s.devices.node_profiles.empty() ? "" : " (with per-node overrides)"));
}

void section_rows(const Scenario& s, const Estimate& e, std::string& out) {
  auto row = [&out](const std::string& key, const std::string& value) { add_row(out, key, value); };
  if (e.context)
    row("K/V bytes", fmt("%.4g of uncompressed", e.context->kv_bytes_ratio) +
                         fmt(" (%.1f %% saved)", 100.0 * e.context->kv_bytes_saved_fraction));
  if (e.pipeline) {
    const PipelineSection& p = *e.pipeline;
    row("bubble", fmt("%.1f %% of rank time idle", 100.0 * p.bubble_fraction) +
                      fmt("  (schedule alone: %.1f %%)", 100.0 * p.ideal_bubble_fraction));
    // Every boundary carries the same messages; show the first and say so.
    const BoundaryTraffic& b = p.boundaries.front();
    const bool same = std::all_of(p.boundaries.begin(), p.boundaries.end(), [&](const BoundaryTraffic& o) {
      return o.forward_bytes == b.forward_bytes && o.backward_bytes == b.backward_bytes;
    });
    row("per boundary/step", "act " + si(b.forward_bytes, "B") + ", act_grad " + si(b.backward_bytes, "B") +
                                 (same ? " (each of " + std::to_string(p.boundaries.size()) + " stage pairs, all rank pairs)"
                                       : " (stages 0-1; others differ, see --json)"));
    row("boundary bytes", fmt("%.4g of uncompressed", p.boundary_bytes_ratio) +
                              fmt(" (%.1f %% saved)", 100.0 * (1 - p.boundary_bytes_ratio)));
  }
  if (e.exposed_by_kind)
    row("exposed by kind", fmt("K/V exchange %.4g s, ", e.exposed_by_kind->kv_seconds) +
                               fmt("boundaries %.4g s, ", e.exposed_by_kind->boundary_seconds) +
                               fmt("grad_sync %.4g s", e.exposed_by_kind->grad_sync_seconds) +
                               "  (step minus the step with those transfers free)");
  if (!e.sync) return;
  const PeriodicSync& y = *e.sync;
  if (y.window_steps > 1)
    row("inner step / window", fmt("%.4g s / ", y.inner_step_seconds) + fmt("%.4g s", y.sync_step_seconds) + "  (the " +
                                   std::to_string(y.window_steps) + " steps beside the exchange)");
  else
    row("inner / sync step", fmt("%.4g s / ", y.inner_step_seconds) + fmt("%.4g s", y.sync_step_seconds));
  if (y.outer_compute_seconds > 0) row("outer compute", fmt("%.4g s", y.outer_compute_seconds) + "  (per sync: the pseudo-gradient, its compression, the outer step)");
  row("comm per sync", fmt("%.4g s", y.comm_per_sync_seconds) +
                           (y.window_steps > 1 ? "  (window minus " + std::to_string(y.window_steps) +
                                                     " inner steps minus outer compute)"
                            : y.outer_compute_seconds > 0 ? "  (sync step minus inner step minus outer compute)"
                                                          : "  (sync step minus inner step)"));
  row("sent per rank/sync", bytes_by_kind(y.bytes_per_rank_per_sync) +
                                (y.window_steps > 1 ? "  (the window)" : "  (the sync step)"));
  if (!y.exchange.empty())
    row("message/replica/sync", si(y.message_bytes_per_replica, "B") +
                                    fmt("  (%.4g x parameters)", y.message_bytes_per_replica / s.model.parameters()));
  if (y.relay_node >= 0) row("relay sent/sync", si(y.relay_bytes_per_sync, "B") + "  (every message to the other replicas)");
}

// "bound  14.1 s (bandwidth): the step is 1.35x its bound; at most 9.3k tokens/s here"
void bound_rows(const Estimate& e, std::string& out) {
  auto row = [&out](const std::string& key, const std::string& value) { add_row(out, key, value); };
  const BoundSection& b = e.bound;
  row("bound", fmt("%.4g s (", b.bound_seconds) + b.bound_kind + fmt("): the step is %.3gx its bound", b.step_over_bound) +
                   fmt("; no schedule of these transfers beats %.4g tokens/s on this network", b.max_tokens_per_s));
  row("", "(the bytes the scenario's collectives send, parallel.exchange and parallel.all_reduce: another "
          "algorithm sends other bytes and has its own bound; `--set parallel.all_reduce=ring,direct` compares)");
  std::string kinds;  // "dkv 264 MB, kv 264 MB, ..."
  for (const auto& [kind, bytes] : b.busiest_link_bytes_by_kind) kinds += (kinds.empty() ? "" : ", ") + kind + " " + si(bytes, "B");
  if (!b.busiest_link.empty())
    row("busiest link", b.busiest_link + ": " + si(b.busiest_link_bytes, "B") + " per step at " +
                            si(8 * b.busiest_link_bandwidth_bytes_per_s, "bps") + fmt(" = %.4g s", b.busiest_link_seconds) +
                            " (" + kinds + ")");
  else
    row("busiest link", "none (no transfer crosses a link)");
  row("latency bound", fmt("%.4g s", b.latency_bound_seconds) + "  (longest chain of dependent transfers' route latencies)");
  row("compute bound", fmt("%.4g s", b.compute_bound_seconds) + "  (the step with every transfer free)");
}

}  // namespace

std::string format_estimate_table(const Scenario& s, const Estimate& e) {
  std::string out;
  auto row = [&out](const std::string& key, const std::string& value) { add_row(out, key, value); };
  scenario_block(s, e, out);
  out += "\n";
  row("step", fmt("%.4g s", e.step_seconds) + (e.sync ? "  (average over the sync period)" : ""));
  row("tokens/s", fmt("%.4g", e.tokens_per_s));
  row("compute", fmt("%.4g s", e.compute_seconds) + "  (busiest rank)");
  row("exposed comm", fmt("%.4g s", e.exposed_comm_seconds) +
                          fmt("  (step with free transfers: %.4g s)", e.free_network_step_seconds));
  row("compute utilisation", fmt("%.1f %%", 100.0 * e.compute_utilisation));
  row("sent per rank/step", bytes_by_kind(e.bytes_per_rank_per_step) + "  (the busiest rank; average)");
  row("peak per rank/step", si(e.peak_bytes_per_rank_per_step, "B") + "  (the busiest rank's busiest step)");
  row("model FLOPs/step", si(e.model_flops_per_step, "FLOP"));
  row("MFU", fmt("%.1f %%", 100.0 * e.mfu));
  section_rows(s, e, out);
  bound_rows(e, out);
  if (e.changing_network) {
    const ChangingNetworkSection& c = *e.changing_network;
    out += "\n";
    row("changing network", std::to_string(c.steps) + " steps back to back on network.dynamics (the figures above: "
                                "the nominal network)");
    row("run time", fmt("%.4g s", c.total_seconds) + fmt(" (%.4g h)", c.total_seconds / 3600) +
                        fmt("; nominal %.4g s", c.nominal_total_seconds) + fmt(", lost %.4g s", c.lost_seconds) +
                        fmt(" (%.1f %%)", c.nominal_total_seconds > 0 ? 100.0 * c.lost_seconds / c.nominal_total_seconds : 0.0) +
                        (c.restart_policy ? "; " + std::to_string(c.restarts) + " restarts from a checkpoint" : ""));
    row("step on it", fmt("mean %.4g s", c.mean_step_seconds) + fmt(", slowest %.4g s", c.slowest_step_seconds) +
                          fmt("; %.4g tokens/s over the run", c.tokens_per_s));
    row("replay", fmt("%.3g s wall", e.replay_wall_seconds) + fmt(" (changing network %.3g s)", c.replay_wall_seconds));
    return out;
  }
  row("replay", fmt("%.3g s wall", e.replay_wall_seconds));
  return out;
}

}  // namespace lowband
