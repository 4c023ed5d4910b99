#include "runtime/estimate/estimate.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "runtime/estimate/layout_steps.h"
#include "runtime/parallel/layout.h"
#include "runtime/scenario/layout_check.h"
#include "sim/replay.h"

namespace lowband {

namespace {

using estimate_detail::LayoutSteps;
using BytesByKind = std::map<std::string, double>;

// The kinds whose transfers are made free, one at a time, for ExposedByKind.
const std::vector<std::set<std::string>> kKindGroups = {{"kv", "dkv"}, {"act", "act_grad"}, {"grad_sync"}};

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

// Per node, the bytes it sends over the network, by kind and "total": in tasks
// [first, end) (end < 0: to the last).
std::vector<BytesByKind> sent_by_node(const sim::StepGraph& g, sim::TaskId first = 0, sim::TaskId end = -1) {
  std::vector<BytesByKind> out(static_cast<size_t>(g.ranks()));
  if (end < 0) end = sim::TaskId(g.size());
  for (sim::TaskId id = first; id < end; ++id) {
    const sim::Task t = g.task(id);
    if (t.kind != sim::TaskKind::transfer || t.peer == t.rank) continue;
    out[size_t(t.rank)][t.kind_tag] += t.bytes;
    out[size_t(t.rank)]["total"] += t.bytes;
  }
  return out;
}

// The most any rank's node sends, by kind: a relay's node is no rank's.
BytesByKind busiest(const std::vector<BytesByKind>& per_node, const parallel::Layout& layout) {
  BytesByKind out = {{"total", 0.0}};
  for (int r = 0; r < layout.ranks(); ++r)
    if (size_t(layout.node_of(r)) < per_node.size())
      for (const auto& [kind, b] : per_node[size_t(layout.node_of(r))]) out[kind] = std::max(out[kind], b);
  return out;
}

void add_common_figures(const Scenario& s, const LayoutSteps& steps, const std::vector<sim::ReplayResult>& replayed,
                        Estimate& e) {
  const parallel::Layout layout(s.parallel);
  e.ranks = layout.ranks();
  std::vector<double> compute(size_t(e.ranks), 0.0);
  std::vector<BytesByKind> per_node(size_t(steps.graphs.front().ranks()));
  for (size_t i = 0; i < steps.graphs.size(); ++i) {
    const double w = steps.weights[i];
    e.step_seconds += w * replayed[i].step_seconds;
    e.free_network_step_seconds += w * free_network_step_seconds(steps.graphs[i]);
    for (int r = 0; r < e.ranks; ++r) compute[size_t(r)] += w * replayed[i].rank_compute_busy_seconds[size_t(layout.node_of(r))];
    const std::vector<BytesByKind> sent = sent_by_node(steps.graphs[i]);
    for (size_t n = 0; n < sent.size() && n < per_node.size(); ++n)
      for (const auto& [kind, b] : sent[n]) per_node[n][kind] += w * b;
    // Each step of a window apart: its tasks lie between its step_end tasks.
    const std::vector<sim::TaskId> ends = steps.graphs[i].step_ends();
    sim::TaskId from = 0;
    for (size_t k = 0; k <= ends.size(); ++k) {
      const sim::TaskId to = k < ends.size() ? ends[k] : sim::TaskId(steps.graphs[i].size());
      const BytesByKind most = busiest(ends.empty() ? sent : sent_by_node(steps.graphs[i], from, to), layout);
      e.peak_bytes_per_rank_per_step = std::max(e.peak_bytes_per_rank_per_step, most.at("total"));
      from = to + 1;
    }
  }
  e.compute_seconds = *std::max_element(compute.begin(), compute.end());
  e.exposed_comm_seconds = e.step_seconds - e.free_network_step_seconds;
  e.compute_utilisation = e.free_network_step_seconds / e.step_seconds;
  e.bytes_per_rank_per_step = busiest(per_node, layout);
  e.tokens_per_step = steps.tokens;
  e.tokens_per_s = steps.tokens / e.step_seconds;
  e.model_flops_per_step = steps.model_flops;
  for (int r = 0; r < e.ranks; ++r) e.peak_flops_per_s += s.devices.for_node(layout.node_of(r)).peak_flops(s.devices.dtype);
  e.mfu = e.model_flops_per_step / (e.step_seconds * e.peak_flops_per_s);
  e.network_model = sim::to_string(s.network.model);
  e.network = sim::describe(s.network);
}

ContextSection context_section(int context_ranks, const LayoutSteps& steps, const estimate_detail::Uncompressed& plain) {
  ContextSection x;
  x.context_ranks = context_ranks;
  x.kv_codec = plain.kv_codec;
  double kv = 0, kv_plain = 0;
  for (size_t i = 0; i < steps.graphs.size(); ++i) {
    double sent = 0;
    for (const BytesByKind& node : sent_by_node(steps.graphs[i]))
      for (const char* kind : {"kv", "dkv"})
        if (node.count(kind)) sent += node.at(kind);
    kv += steps.weights[i] * sent;
    kv_plain += steps.weights[i] * plain.kv_bytes;
  }
  x.kv_bytes_ratio = kv_plain > 0 ? kv / kv_plain : 1.0;
  x.kv_bytes_saved_fraction = 1.0 - x.kv_bytes_ratio;
  return x;
}

// What crosses each stage boundary: the rank pairs (stage s, c) -> (s + 1, c) of
// every replica, found by their nodes.
std::vector<BoundaryTraffic> boundary_traffic(const parallel::Layout& layout, const LayoutSteps& steps, int stages) {
  std::vector<BoundaryTraffic> out(size_t(std::max(stages - 1, 0)));
  for (int b = 0; b < int(out.size()); ++b) out[size_t(b)].from_stage = b;
  std::map<std::pair<int, int>, BoundaryTraffic*> by_nodes;
  for (int r = 0; r < layout.ranks(); ++r) {
    const std::vector<int> stage_ranks = layout.pipeline_group(r);
    const size_t st = size_t(layout.place(r).stage);
    if (st + 1 < stage_ranks.size()) by_nodes[{layout.node_of(r), layout.node_of(stage_ranks[st + 1])}] = &out[st];
  }
  for (size_t i = 0; i < steps.graphs.size(); ++i)
    for (const sim::Task& t : steps.graphs[i].tasks()) {
      const bool forward = t.kind_tag == "act";
      if (t.kind != sim::TaskKind::transfer || (!forward && t.kind_tag != "act_grad")) continue;
      const auto it = forward ? by_nodes.find({t.rank, t.peer}) : by_nodes.find({t.peer, t.rank});
      if (it != by_nodes.end()) (forward ? it->second->forward_bytes : it->second->backward_bytes) += steps.weights[i] * t.bytes;
    }
  return out;
}

PipelineSection pipeline_section(const Scenario& s, int stages, const LayoutSteps& steps,
                                 const std::vector<sim::ReplayResult>& replayed, const estimate_detail::Uncompressed& plain) {
  const parallel::Layout layout(s.parallel);
  PipelineSection p;
  p.stages = stages;
  p.microbatches = s.parallel.microbatches;
  p.schedule = word_of(pipeline_schedule_words(), s.parallel.schedule);
  for (size_t i = 0; i < steps.graphs.size(); ++i) {
    const sim::ReplayResult& r = replayed[i];
    double idle = 0;
    for (int rank = 0; rank < layout.ranks(); ++rank)
      idle += r.step_seconds - r.rank_compute_busy_seconds[size_t(layout.node_of(rank))];
    p.bubble_fraction += steps.weights[i] * (idle / (layout.ranks() * r.step_seconds));
  }
  p.ideal_bubble_fraction = double(stages - 1) / double(p.microbatches + stages - 1);
  p.boundaries = boundary_traffic(layout, steps, stages);
  double sent = 0;
  for (const BoundaryTraffic& b : p.boundaries) sent += b.forward_bytes + b.backward_bytes;
  p.boundary_bytes_ratio = plain.boundary_bytes > 0 ? sent / plain.boundary_bytes : 1.0;
  p.boundary_codec = plain.boundary_codec;
  return p;
}

// Per sync: with fragments (sync_graphs > 1) the mean over the period's syncs.
PeriodicSync periodic_sync(const Scenario& s, const LayoutSteps& steps, const std::vector<sim::ReplayResult>& replayed) {
  const parallel::Layout layout(s.parallel);
  PeriodicSync y;
  y.method = steps.periodic_sync;
  y.inner_steps = steps.period_steps;
  const int n = steps.sync_graphs;
  y.inner_step_seconds = replayed[size_t(n)].step_seconds;
  y.window_steps = steps.graphs[0].steps();
  if (y.method != "sparse") {
    y.delay_steps = s.parallel.data_sync.delay_steps;
    y.fragments = s.parallel.data_sync.fragments;
  }
  std::vector<BytesByKind> sent(size_t(steps.graphs[0].ranks()));
  for (int i = 0; i < n; ++i) {
    const sim::StepGraph& g = steps.graphs[size_t(i)];
    y.sync_step_seconds += replayed[size_t(i)].step_seconds / n;
    std::vector<double> outer(size_t(g.ranks()), 0.0);
    for (const sim::Task& t : g.tasks())
      if (t.kind == sim::TaskKind::compute && t.kind_tag == "outer_sync") outer[size_t(t.rank)] += t.seconds;
    y.outer_compute_seconds += (outer.empty() ? 0.0 : *std::max_element(outer.begin(), outer.end())) / n;
    const std::vector<BytesByKind> mine = sent_by_node(g);
    for (size_t node = 0; node < mine.size() && node < sent.size(); ++node)
      for (const auto& [kind, b] : mine[node]) sent[node][kind] += b / n;
  }
  y.comm_per_sync_seconds = y.sync_step_seconds - y.window_steps * y.inner_step_seconds - y.outer_compute_seconds;
  y.bytes_per_rank_per_sync = busiest(sent, layout);
  if (y.method == "sparse") return y;
  y.part_message_bytes = steps.part_message_bytes;
  for (double b : steps.part_message_bytes) y.message_bytes_per_replica += b / y.fragments;
  y.relay_node = layout.relay_node();
  // diloco's pseudo-gradients are summed on the way; sparseloco's messages meet as data_sync.exchange says.
  y.exchange = y.method == "sparseloco" ? word_of(data_sync_exchange_words(), s.parallel.data_sync.exchange) : "all_reduce";
  if (y.relay_node >= 0 && size_t(y.relay_node) < sent.size() && sent[size_t(y.relay_node)].count("total"))
    y.relay_bytes_per_sync = sent[size_t(y.relay_node)].at("total");
  return y;
}

}  // namespace

// Dependencies always come earlier in the graph, so one pass in id order finds it.
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

BoundSection physical_bound(const sim::NetworkLinks& links, const std::vector<const sim::StepGraph*>& graphs,
                            const std::vector<double>& weights, double step_seconds, double tokens_per_step) {
  sim::LinkLoad load;
  BoundSection b;
  for (size_t i = 0; i < graphs.size(); ++i) {
    sim::add_link_load(links, *graphs[i], weights[i], load);
    b.latency_bound_seconds += weights[i] * sim::latency_chain_seconds(links, *graphs[i]);
    b.compute_bound_seconds += weights[i] * free_network_step_seconds(*graphs[i]);
  }
  const sim::BusiestLink busiest = sim::busiest_link(links, load);
  b.busiest_link = busiest.name;
  b.busiest_link_bytes = busiest.bytes;
  b.busiest_link_bandwidth_bytes_per_s = busiest.bandwidth_bytes_per_s;
  b.busiest_link_seconds = busiest.seconds;
  for (size_t i = 0; busiest.link >= 0 && i < graphs.size(); ++i)
    sim::add_link_bytes_by_kind(links, *graphs[i], busiest.link, weights[i], b.busiest_link_bytes_by_kind);
  b.bound_seconds = b.compute_bound_seconds, b.bound_kind = "compute";
  if (b.busiest_link_seconds > b.bound_seconds) b.bound_seconds = b.busiest_link_seconds, b.bound_kind = "bandwidth";
  if (b.latency_bound_seconds > b.bound_seconds) b.bound_seconds = b.latency_bound_seconds, b.bound_kind = "latency";
  b.step_over_bound = b.bound_seconds > 0 ? step_seconds / b.bound_seconds : 0.0;
  b.max_tokens_per_s = b.bound_seconds > 0 ? tokens_per_step / b.bound_seconds : 0.0;
  return b;
}

Estimate estimate(const Scenario& scenario) {
  // Every per-step figure on the nominal network; network.dynamics only in the
  // changing_network section, over a run's clock.
  Scenario s = scenario;
  s.network.dynamics.clear();
  s.network.restart.reset();
  const LayoutSteps steps = estimate_detail::build_layout_steps(s);
  const estimate_detail::Uncompressed plain = estimate_detail::uncompressed_traffic(s);
  int stages = 1, context_ranks = 1;
  for (const ReplicaConfig& r : replica_shapes(s.parallel))
    stages = std::max(stages, r.pipeline), context_ranks = std::max(context_ranks, r.context);
  // With both a K/V exchange and stage boundaries, also each step with each kind free.
  const bool by_kind = stages > 1 && context_ranks > 1;
  std::vector<sim::StepGraph> graphs = steps.graphs;
  for (size_t i = 0; by_kind && i < steps.graphs.size(); ++i)
    for (const std::set<std::string>& kinds : kKindGroups) graphs.push_back(without_transfers(steps.graphs[i], kinds));
  const auto start = std::chrono::steady_clock::now();
  const std::vector<sim::ReplayResult> replayed = sim::replay_batch(s.network, graphs);
  Estimate e;
  e.replay_wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  add_common_figures(s, steps, replayed, e);
  const parallel::LayoutKind kind = parallel::layout_kind(s.parallel);
  e.parallelism = kind == parallel::LayoutKind::data       ? "data"
                  : kind == parallel::LayoutKind::pipeline ? (context_ranks > 1 ? "pipeline x context" : "pipeline")
                                                           : "context";
  if (kind == parallel::LayoutKind::data)
    e.data = DataSection{int(steps.replica_shapes.size()), steps.replica_shapes,
                         data_sync_method_name(s.parallel.data_sync.method)};
  if (context_ranks > 1) {
    e.context = context_section(context_ranks, steps, plain);
    e.context->kv_ranks = compress::mos_ranks(s);
    e.context->sequences_in_flight = stages > 1 ? 1 : parallel::sequences_in_flight(s.parallel);
  }
  if (stages > 1) e.pipeline = pipeline_section(s, stages, steps, replayed, plain);
  if (by_kind) {
    ExposedByKind x;
    const size_t n = steps.graphs.size(), groups = kKindGroups.size();
    for (size_t i = 0; i < n; ++i) {
      const double w = steps.weights[i], step = replayed[i].step_seconds;
      x.kv_seconds += w * (step - replayed[n + groups * i].step_seconds);
      x.boundary_seconds += w * (step - replayed[n + groups * i + 1].step_seconds);
      x.grad_sync_seconds += w * (step - replayed[n + groups * i + 2].step_seconds);
    }
    e.exposed_by_kind = x;
  }
  if (!steps.periodic_sync.empty()) e.sync = periodic_sync(s, steps, replayed);
  std::vector<const sim::StepGraph*> step_graphs;
  for (const sim::StepGraph& g : steps.graphs) step_graphs.push_back(&g);
  e.bound = physical_bound(sim::NetworkLinks(s.network), step_graphs, steps.weights, e.step_seconds, e.tokens_per_step);
  if (!scenario.network.dynamics.empty()) {
    std::vector<double> nominal;
    for (size_t i = 0; i < steps.graphs.size(); ++i) nominal.push_back(replayed[i].step_seconds);
    e.changing_network = estimate_detail::replay_on_changing_network(
        scenario.network, steps, nominal, scenario.training.steps, scenario.training.checkpoint_every,
        e.tokens_per_step);
  }
  return e;
}

}  // namespace lowband
