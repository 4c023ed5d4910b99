#include "sim/bound.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <utility>

namespace lowband::sim {

namespace {

const Link& access_of(const NetworkSpec& net, int node, const Link& fallback) {
  const Link* link = &fallback;
  for (const NodeLink& o : net.node_links)
    if (o.node == node) link = &o.link;  // the last override wins, as sim/platform.cpp
  return *link;
}

std::string node_name(int node) { return "node " + std::to_string(node); }

}  // namespace

// One directed link per ordered pair of `count` ends (full-mesh nodes, or the
// clusters' WAN links): `all` unless `overrides` names the pair. A pair's link is
// built from its lower end, so UP is a -> b for a < b.
void NetworkLinks::add_pair_links(int count, const Link& all, const std::vector<PairLink>& overrides,
                                  const std::string& name) {
  const size_t n = size_t(count);
  std::vector<const Link*> pair(n * n, &all);
  for (const PairLink& p : overrides) pair[size_t(p.a) * n + size_t(p.b)] = pair[size_t(p.b) * n + size_t(p.a)] = &p.link;
  pair_index_.assign(n * n, -1);
  pair_latency_.assign(n * n, 0.0);
  for (int a = 0; a < count; ++a)
    for (int b = 0; b < count; ++b) {
      if (a == b) continue;
      const size_t i = size_t(a) * n + size_t(b);
      pair_index_[i] = int(links_.size());
      pair_latency_[i] = pair[i]->latency_s;
      links_.push_back({name + std::to_string(a) + "->" + std::to_string(b),
                        a < b ? pair[i]->upload() : pair[i]->bandwidth_bytes_per_s});
    }
}

NetworkLinks::NetworkLinks(const NetworkSpec& net) : net_(net) {
  const int N = net.nodes;
  switch (net.topology) {
    case Topology::star:
    case Topology::clusters: {
      std::vector<const Link*> access(size_t(N), &net.link);
      if (net.topology == Topology::clusters) {
        int node = 0;
        for (size_t c = 0; c < net.clusters.size(); ++c)
          for (int k = 0; k < net.clusters[c].nodes && node < N; ++k, ++node) {
            access[size_t(node)] = &net.clusters[c].access;
            cluster_of_.push_back(int(c));
          }
      }
      for (int n = 0; n < N; ++n) {
        const Link& l = access_of(net, n, *access[size_t(n)]);
        links_.push_back({node_name(n) + "'s uplink", l.upload()});
        links_.push_back({node_name(n) + "'s downlink", l.bandwidth_bytes_per_s});
        access_latency_.push_back(l.latency_s);
      }
      if (net.topology == Topology::star) break;
      add_pair_links(int(net.clusters.size()), net.wan, net.wan_links, "WAN cluster ");
      break;
    }
    case Topology::full_mesh: {
      add_pair_links(N, net.link, net.pair_links, "link ");
      break;
    }
    case Topology::explicit_links: {
      for (int n = 0; n < N; ++n) {
        links_.push_back({node_name(n) + "'s links out", 0.0});
        links_.push_back({node_name(n) + "'s links in", 0.0});
      }
      std::vector<std::vector<std::pair<int, double>>> adj(static_cast<size_t>(N));
      for (const PairLink& p : net.pair_links) {
        // Listed a -> b is UP (upload()), b -> a DOWN.
        links_[size_t(up(p.a))].bandwidth_bytes_per_s += p.link.upload();
        links_[size_t(down(p.b))].bandwidth_bytes_per_s += p.link.upload();
        links_[size_t(up(p.b))].bandwidth_bytes_per_s += p.link.bandwidth_bytes_per_s;
        links_[size_t(down(p.a))].bandwidth_bytes_per_s += p.link.bandwidth_bytes_per_s;
        adj[size_t(p.a)].emplace_back(p.b, p.link.latency_s);
        adj[size_t(p.b)].emplace_back(p.a, p.link.latency_s);
      }
      // A listed pair's own link, each way: the route between them (one hop, as
      // SimGrid's fewest-hop routing takes), so on a mesh of listed pairs the bound
      // sees the slow pair a ring crosses, not only each node's cut.
      pair_index_.assign(size_t(N) * size_t(N), -1);
      for (const PairLink& p : net.pair_links) {
        pair_index_[size_t(p.a) * size_t(N) + size_t(p.b)] = int(links_.size());
        links_.push_back({"link " + std::to_string(p.a) + "->" + std::to_string(p.b), p.link.upload()});
        pair_index_[size_t(p.b) * size_t(N) + size_t(p.a)] = int(links_.size());
        links_.push_back({"link " + std::to_string(p.b) + "->" + std::to_string(p.a), p.link.bandwidth_bytes_per_s});
      }
      // Least latency from each node (Dijkstra): never more than SimGrid's fewest-hop route's.
      explicit_latency_.assign(size_t(N), std::vector<double>(size_t(N), std::numeric_limits<double>::infinity()));
      for (int s = 0; s < N; ++s) {
        std::vector<double>& dist = explicit_latency_[size_t(s)];
        using Item = std::pair<double, int>;
        std::priority_queue<Item, std::vector<Item>, std::greater<Item>> queue;
        dist[size_t(s)] = 0;
        queue.push({0.0, s});
        while (!queue.empty()) {
          const auto [d, n] = queue.top();
          queue.pop();
          if (d > dist[size_t(n)]) continue;
          for (const auto& [m, lat] : adj[size_t(n)])
            if (d + lat < dist[size_t(m)]) dist[size_t(m)] = d + lat, queue.push({d + lat, m});
        }
      }
      break;
    }
  }
}

void NetworkLinks::route(int src, int dst, std::vector<int>& out) const {
  out.clear();
  if (src == dst) return;
  switch (net_.topology) {
    case Topology::star:
      out = {up(src), down(dst)};
      return;
    case Topology::explicit_links: {
      out = {up(src), down(dst)};  // each node's cut, whatever the route
      const int direct = pair_index_[size_t(src) * size_t(net_.nodes) + size_t(dst)];
      if (direct >= 0) out.push_back(direct);
      return;
    }
    case Topology::full_mesh:
      out = {pair_index_[size_t(src) * size_t(net_.nodes) + size_t(dst)]};
      return;
    case Topology::clusters: {
      const int a = cluster_of(src), b = cluster_of(dst);
      out = {up(src)};
      if (a != b) out.push_back(pair_index_[size_t(a) * net_.clusters.size() + size_t(b)]);
      out.push_back(down(dst));
      return;
    }
  }
}

double NetworkLinks::route_latency(int src, int dst) const {
  if (src == dst) return 0;
  switch (net_.topology) {
    case Topology::star: return access_latency_[size_t(src)] + access_latency_[size_t(dst)];
    case Topology::full_mesh: return pair_latency_[size_t(src) * size_t(net_.nodes) + size_t(dst)];
    case Topology::clusters: {
      const int a = cluster_of(src), b = cluster_of(dst);
      const double wan = a == b ? 0.0 : pair_latency_[size_t(a) * net_.clusters.size() + size_t(b)];
      return access_latency_[size_t(src)] + wan + access_latency_[size_t(dst)];
    }
    case Topology::explicit_links: return explicit_latency_[size_t(src)][size_t(dst)];
  }
  return 0;
}

void add_link_load(const NetworkLinks& links, const StepGraph& graph, double weight, LinkLoad& load) {
  load.bytes.resize(links.links().size(), 0.0);
  std::vector<int> route;
  for (const StepGraph::Record& r : graph.records()) {
    if (r.kind != TaskKind::transfer || r.rank == r.peer) continue;
    links.route(r.rank, r.peer, route);
    for (int l : route) load.bytes[size_t(l)] += weight * r.amount;
  }
}

BusiestLink busiest_link(const NetworkLinks& links, const LinkLoad& load) {
  BusiestLink out;
  for (size_t l = 0; l < load.bytes.size(); ++l) {
    if (!(load.bytes[l] > 0)) continue;
    const double bw = links.links()[l].bandwidth_bytes_per_s;
    const double seconds = bw > 0 ? load.bytes[l] / bw : std::numeric_limits<double>::infinity();
    if (out.link < 0 || seconds > out.seconds)
      out = {int(l), links.links()[l].name, load.bytes[l], bw, seconds};
  }
  return out;
}

void add_link_bytes_by_kind(const NetworkLinks& links, const StepGraph& graph, int link, double weight,
                            std::map<std::string, double>& bytes) {
  std::vector<int> route;
  for (const StepGraph::Record& r : graph.records()) {
    if (r.kind != TaskKind::transfer || r.rank == r.peer) continue;
    links.route(r.rank, r.peer, route);
    if (std::find(route.begin(), route.end(), link) != route.end()) bytes[graph.tag_names()[r.tag]] += weight * r.amount;
  }
}

// Dependencies always come earlier in the graph, so one pass in id order finds it.
double latency_chain_seconds(const NetworkLinks& links, const StepGraph& g) {
  std::vector<double> finish(g.size(), 0.0);
  double last = 0;
  const auto& records = g.records();
  for (size_t i = 0; i < records.size(); ++i) {
    const StepGraph::Record& r = records[i];
    double start = 0;
    for (TaskId d : g.deps(TaskId(i))) start = std::max(start, finish[size_t(d)]);
    finish[i] = start + (r.kind == TaskKind::transfer ? links.route_latency(r.rank, r.peer) : 0.0);
    last = std::max(last, finish[i]);
  }
  return last;
}

}  // namespace lowband::sim
