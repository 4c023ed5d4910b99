// Names, descriptions and step-graph bookkeeping.
#include <gtest/gtest.h>

#include <stdexcept>

#include "networks.h"
#include "sim/network.h"
#include "sim/step_graph.h"

namespace lowband::sim {
namespace {

using testing::link;

TEST(Network, NamesAndDescriptions) {
  EXPECT_STREQ(to_string(NetworkModel::ideal), "ideal");
  EXPECT_STREQ(to_string(NetworkModel::tcp), "tcp");
  EXPECT_STREQ(to_string(Topology::explicit_links), "explicit_links");
  // 300 Mbps = 37.5e6 bytes/s.
  EXPECT_EQ(describe(testing::star(8, link(37.5e6, 1e-3))), "star, 8 nodes, 300 Mbps / 1 ms per access link (path latency 2 ms), model ideal");
  NetworkSpec mesh = testing::full_mesh(4, link(12.5e9, 5e-6), NetworkModel::tcp);
  mesh.pair_links.push_back(PairLink{0, 1, link(1e6, 0)});
  EXPECT_EQ(describe(mesh), "full_mesh, 4 nodes, 100 Gbps / 5 us per pair link (= path), 1 pair override, model tcp "
            "(cubic, send buffer 4 MiB, warm connections)");
  EXPECT_EQ(describe(testing::two_clusters(2, 3, link(12.5e9, 5e-6), link(125e6, 0.02))),
            "clusters, 5 nodes in 2 clusters (2 x 100 Gbps / 5 us; 3 x 100 Gbps / 5 us per access link), WAN 1 Gbps / "
            "20 ms per link; a path adds its links' latencies, model ideal");
}

TEST(Network, DescriptionNamesTheDynamics) {
  NetworkSpec star = testing::star(2, link(37.5e6, 1e-3));
  star.dynamics.push_back(NetworkDynamic{{}, DynamicQuantity::bandwidth, {}});
  EXPECT_EQ(describe(star), "star, 2 nodes, 300 Mbps / 1 ms per access link (path latency 2 ms), model ideal, "
            "1 network.dynamics trace (bandwidth)");
  star.dynamics.push_back(NetworkDynamic{{}, DynamicQuantity::state, {}});
  star.dynamics.push_back(NetworkDynamic{{}, DynamicQuantity::bandwidth, {}});
  EXPECT_EQ(describe(star), "star, 2 nodes, 300 Mbps / 1 ms per access link (path latency 2 ms), model ideal, "
            "3 network.dynamics traces (bandwidth, state)");
  star.restart = RestartPolicy{600, 90};
  EXPECT_EQ(describe(star), "star, 2 nodes, 300 Mbps / 1 ms per access link (path latency 2 ms), model ideal, "
            "3 network.dynamics traces (bandwidth, state), restart after a 600 s stall (relaunch 90 s)");
}

TEST(StepGraph, DependenciesMustBeEarlierTasks) {
  StepGraph g(2);
  const TaskId a = g.add_compute(0, 1.0, {}, "a");
  EXPECT_EQ(a, 0);
  EXPECT_THROW(g.add_compute(0, 1.0, {1}, "self"), std::invalid_argument);    // itself
  EXPECT_THROW(g.add_transfer(0, 1, 10, {5}, "later"), std::invalid_argument);  // not yet added
  EXPECT_THROW(g.add_transfer(0, 1, 10, {-1}, "neg"), std::invalid_argument);
  EXPECT_THROW(g.add_compute(2, 1.0, {}, "rank"), std::invalid_argument);
  EXPECT_THROW(g.add_transfer(0, 1, -1, {}, "bytes"), std::invalid_argument);
  EXPECT_THROW(g.add_compute(0, -1, {}, "secs"), std::invalid_argument);
  EXPECT_EQ(g.tasks().size(), 1u);  // failed adds leave nothing behind
  EXPECT_EQ(g.add_transfer(0, 1, 10, {a}, "kv"), 1);
}

TEST(StepGraph, BytesAndComputeAccounting) {
  // Rank 0 sends 100 kv + 30 grad_sync bytes (a self-transfer does not count); computes 1.5 s.
  StepGraph g(2);
  g.add_transfer(0, 1, 100, {}, "kv");
  g.add_transfer(0, 1, 30, {}, "grad_sync");
  g.add_transfer(0, 0, 1000, {}, "kv");
  g.add_transfer(1, 0, 7, {}, "kv");
  g.add_compute(0, 1.0, {}, "attention");
  g.add_compute(0, 0.5, {}, "mlp");
  EXPECT_DOUBLE_EQ(g.bytes_sent(0), 130);
  EXPECT_DOUBLE_EQ(g.bytes_sent(0, "kv"), 100);
  EXPECT_DOUBLE_EQ(g.bytes_sent(1, "kv"), 7);
  EXPECT_DOUBLE_EQ(g.compute_seconds(0), 1.5);
  EXPECT_DOUBLE_EQ(g.compute_seconds(1), 0);
}

}  // namespace
}  // namespace lowband::sim
