#include "runtime/parallel/layout.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace lowband::parallel {

LayoutKind layout_kind(const ParallelConfig& p) {
  if (p.data > 1 || p.replicas.size() > 1) return LayoutKind::data;
  return p.pipeline > 1 ? LayoutKind::pipeline : LayoutKind::context;
}

int sequences_in_flight(const ParallelConfig& replica) {
  return replica.pipeline == 1 && replica.context > 1 ? replica.microbatches : 1;
}

Layout::Layout(const ParallelConfig& p) {
  std::vector<ReplicaConfig> replicas = p.replicas;
  if (replicas.empty())  // `data` identical replicas
    replicas.assign(size_t(p.data), ReplicaConfig{p.pipeline, p.context, {}, false});
  int rank = 0;
  for (size_t d = 0; d < replicas.size(); ++d) {
    replicas_.push_back({rank, replicas[d].pipeline, replicas[d].context});
    for (int s = 0; s < replicas[d].pipeline; ++s)
      for (int c = 0; c < replicas[d].context; ++c, ++rank) places_.push_back({int(d), s, c, p.node_of(rank)});
  }
  if (!p.placement.empty() && p.placement.size() != places_.size())
    throw std::invalid_argument("Layout: " + std::to_string(p.placement.size()) + " placements for " +
                                std::to_string(places_.size()) + " ranks");
  if (p.data_sync.exchange == DataSyncExchange::relay) {
    relay_node_ = p.data_sync.relay_node;
    if (relay_node_ < 0) throw std::invalid_argument("Layout: the relay exchange without a relay node");
  }
}

int Layout::rank_at(int replica, int stage, int context_rank) const {
  const Replica& r = replicas_.at(size_t(replica));
  if (stage < 0 || stage >= r.pipeline || context_rank < 0 || context_rank >= r.context)
    throw std::out_of_range("Layout::rank_at: no stage " + std::to_string(stage) + ", context rank " +
                            std::to_string(context_rank) + " in replica " + std::to_string(replica));
  return r.first_rank + stage * r.context + context_rank;
}

std::vector<int> Layout::context_group(int rank) const {
  const RankPlace& me = place(rank);
  std::vector<int> out;
  for (int c = 0; c < replicas_[size_t(me.replica)].context; ++c) out.push_back(rank_at(me.replica, me.stage, c));
  return out;
}

std::vector<int> Layout::pipeline_group(int rank) const {
  const RankPlace& me = place(rank);
  std::vector<int> out;
  for (int s = 0; s < replicas_[size_t(me.replica)].pipeline; ++s) out.push_back(rank_at(me.replica, s, me.context_rank));
  return out;
}

std::vector<int> Layout::data_group(int rank) const {
  const RankPlace& me = place(rank);
  std::vector<int> out;
  for (size_t d = 0; d < replicas_.size(); ++d) {
    const Replica& r = replicas_[d];
    // Replicas of other shapes hold other layer ranges: the data issue groups those by layer.
    if (me.stage < r.pipeline && me.context_rank < r.context) out.push_back(rank_at(int(d), me.stage, me.context_rank));
  }
  return out;
}

sim::StepGraph place_on_nodes(const sim::StepGraph& graph, const Layout& layout) {
  const bool relay = graph.ranks() == layout.ranks() + 1 && layout.relay_node() >= 0;
  if (graph.ranks() != layout.ranks() && !relay)
    throw std::invalid_argument("place_on_nodes: a graph of " + std::to_string(graph.ranks()) + " ranks, a layout of " +
                                std::to_string(layout.ranks()) + (layout.relay_node() >= 0 ? " and a relay" : ""));
  auto node = [&](int rank) { return rank == layout.ranks() ? layout.relay_node() : layout.node_of(rank); };
  int nodes = relay ? layout.relay_node() + 1 : 0;
  for (int r = 0; r < layout.ranks(); ++r) nodes = std::max(nodes, layout.node_of(r) + 1);
  sim::StepGraph out(nodes);
  for (const sim::Task& t : graph.tasks()) {
    if (t.kind == sim::TaskKind::compute) out.add_compute(node(t.rank), t.seconds, t.deps, t.kind_tag);
    else out.add_transfer(node(t.rank), node(t.peer), t.bytes, t.deps, t.kind_tag);
  }
  return out;
}

}  // namespace lowband::parallel
