#pragma once
// Small NetworkSpec builders and helpers for the sim tests.
#include <vector>

#include "sim/network.h"

namespace lowband::sim::testing {

inline Link link(double bandwidth_bytes_per_s, double latency_s) { return Link{bandwidth_bytes_per_s, latency_s}; }

inline NetworkSpec star(int nodes, Link access, NetworkModel model = NetworkModel::ideal) {
  NetworkSpec n;
  n.model = model;
  n.topology = Topology::star;
  n.nodes = nodes;
  n.link = access;
  return n;
}

inline NetworkSpec full_mesh(int nodes, Link pair, NetworkModel model = NetworkModel::ideal) {
  NetworkSpec n = star(nodes, pair, model);
  n.topology = Topology::full_mesh;
  return n;
}

// Two clusters of a and b nodes (nodes 0..a-1, then a..a+b-1) joined by one WAN link.
inline NetworkSpec two_clusters(int a, int b, Link access, Link wan) {
  NetworkSpec n;
  n.topology = Topology::clusters;
  n.nodes = a + b;
  n.clusters = {Cluster{a, access}, Cluster{b, access}};
  n.wan = wan;
  return n;
}

// Relative tolerance of every closed-form check: 0.1 %.
inline constexpr double kTolerance = 1e-3;

// Ranks 0..p-1.
inline std::vector<int> first_ranks(int p) {
  std::vector<int> r(static_cast<size_t>(p));
  for (int i = 0; i < p; ++i) r[static_cast<size_t>(i)] = i;
  return r;
}

}  // namespace lowband::sim::testing
