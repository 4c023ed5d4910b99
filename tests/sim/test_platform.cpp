// Platform semantics: explicit links (fewest-hop routes), clusters, and bad networks.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "networks.h"
#include "sim/platform.h"
#include "sim/replay.h"

namespace lowband::sim {
namespace {

using testing::kTolerance;
using testing::link;

constexpr double B = 1e8, L = 1e-3, S = 1e6;

// A line 0-1-2-3-4 (link 1-2 at B/2) closed into a ring by 4-0 with ten times the latency.
NetworkSpec ring5() {
  NetworkSpec n;
  n.topology = Topology::explicit_links;
  n.nodes = 5;
  n.pair_links = {PairLink{0, 1, link(B, L)}, PairLink{1, 2, link(B / 2, L)}, PairLink{2, 3, link(B, L)},
                  PairLink{3, 4, link(B, L)}, PairLink{4, 0, link(B, 10 * L)}};
  return n;
}

double one_transfer(const NetworkSpec& net, int src, int dst) {
  StepGraph g(net.nodes);
  g.add_transfer(src, dst, S, {}, "x");
  return replay(net, g).step_seconds;
}

TEST(ExplicitLinks, RoutesTakeFewestHopsThenSumLatencyAndTakeMinBandwidth) {
  // 0->4: the direct link (1 hop) beats 0-1-2-3-4 (4 hops) though its latency is higher: 10L + S/B = 20 ms.
  EXPECT_NEAR(one_transfer(ring5(), 0, 4), 0.020, kTolerance * 0.020);
  // 0->3: 0-4-3 (2 hops, 11L) beats 0-1-2-3 (3 hops, 3L): 11 ms + S/B = 21 ms.
  EXPECT_NEAR(one_transfer(ring5(), 0, 3), 0.021, kTolerance * 0.021);
  // 0->2: 0-1-2 (2 hops): latency 2L, bandwidth min(B, B/2): 2 ms + 20 ms = 22 ms.
  EXPECT_NEAR(one_transfer(ring5(), 0, 2), 0.022, kTolerance * 0.022);
  // 2->0, the reverse route, costs the same: 22 ms.
  EXPECT_NEAR(one_transfer(ring5(), 2, 0), 0.022, kTolerance * 0.022);
}

TEST(ExplicitLinks, ReverseFlowsUseOppositeDirections) {
  // 0->1 and 1->0 together over the single full-duplex link 0-1: each alone, L + S/B = 11 ms.
  StepGraph g(5);
  g.add_transfer(0, 1, S, {}, "x");
  g.add_transfer(1, 0, S, {}, "x");
  EXPECT_NEAR(replay(ring5(), g).step_seconds, 0.011, kTolerance * 0.011);
}

TEST(ExplicitLinks, SharingFollowsRouteLatencyAsInCm02) {
  // 0->1 (latency L) and 0->2 (routed 0-1-2, latency 2L) share link 0-1 in one direction.
  // CM02 (the ideal model) splits a link in inverse proportion to each flow's route
  // latency, like TCP's RTT unfairness, so equal shares need equal latencies. Here:
  //  [L, 2L]  0->1 alone at B: sends B L = 1e5 bytes (0->2 is still in its latency);
  //  then     0->1 at 2B/3, 0->2 at B/3: 0->1 ends at 2L + 9e5/(2B/3) = 15.5 ms, when 0->2
  //           has sent 13.5 ms * B/3 = 4.5e5 bytes;
  //  then     0->2 alone, capped by link 1-2 at B/2: ends at 15.5 ms + 5.5e5/(B/2) = 26.5 ms.
  StepGraph h(5);
  h.add_transfer(0, 1, S, {}, "x");
  h.add_transfer(0, 2, S, {}, "x");
  const ReplayResult r = replay(ring5(), h, ReplayOptions{true});
  EXPECT_NEAR(r.task_finish_seconds[0], 0.0155, kTolerance * 0.0155);
  EXPECT_NEAR(r.task_finish_seconds[1], 0.0265, kTolerance * 0.0265);
}

TEST(ExplicitLinks, UnreachableNodeIsNamed) {
  // Nodes 0..4 in a line; node 5 has no link.
  NetworkSpec n;
  n.topology = Topology::explicit_links;
  n.nodes = 6;
  for (int i = 0; i < 4; ++i) n.pair_links.push_back(PairLink{i, i + 1, link(B, L)});
  try {
    validate_network(n);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "network: node 5 cannot reach node 0");
  }
  StepGraph g(6);
  g.add_transfer(0, 1, S, {}, "x");
  EXPECT_THROW(replay(n, g), InputError);  // replay validates too, before any SimGrid work
}

TEST(Clusters, WanOverrideAppliesToItsClusterPair) {
  // Three one-node clusters, access 1e10 B/s / 5 us, WAN 1e8 B/s / 10 ms, but clusters 0 and 2
  // joined at 5e7 B/s. 0->1: 2*5us + 10 ms + S/1e8 = 20.01 ms; 0->2: 10.01 ms + S/5e7 = 30.01 ms.
  NetworkSpec n;
  n.topology = Topology::clusters;
  n.nodes = 3;
  n.clusters = {Cluster{1, link(1e10, 5e-6)}, Cluster{1, link(1e10, 5e-6)}, Cluster{1, link(1e10, 5e-6)}};
  n.wan = link(1e8, 0.010);
  n.wan_links = {PairLink{2, 0, link(5e7, 0.010)}};
  EXPECT_NEAR(one_transfer(n, 0, 1), 0.02001, kTolerance * 0.02);
  EXPECT_NEAR(one_transfer(n, 0, 2), 0.03001, kTolerance * 0.03);
  // A per-node override inside a cluster: node 1's access at 1e6 B/s bounds 0->1: 10.01 ms + 1 s.
  n.node_links = {NodeLink{1, link(1e6, 5e-6)}};
  EXPECT_NEAR(one_transfer(n, 0, 1), 1.01001, kTolerance * 1.01);
}

TEST(Clusters, InsideAClusterItIsAStar) {
  // Two nodes in one cluster: 2 L_access + S/B_access = 10 us + 0.1 ms.
  const NetworkSpec n = testing::two_clusters(2, 2, link(1e10, 5e-6), link(1e8, 0.010));
  EXPECT_NEAR(one_transfer(n, 2, 3), 1.1e-4, kTolerance * 1.1e-4);
}

std::string place_of(const NetworkSpec& n) {
  try {
    validate_network(n);
  } catch (const InputError& e) {
    return e.place();
  }
  return "(accepted)";
}

TEST(Validation, BadNetworksNameThePlace) {
  EXPECT_EQ(place_of(testing::star(0, link(B, L))), "network.nodes");
  EXPECT_EQ(place_of(testing::star(2, link(0, L))), "network.link.bandwidth");
  EXPECT_EQ(place_of(testing::star(2, link(-5, L))), "network.link.bandwidth");
  EXPECT_EQ(place_of(testing::star(2, link(B, -1))), "network.link.latency");
  NetworkSpec s = testing::star(2, link(B, L));
  s.node_links = {NodeLink{9, link(B, L)}};
  EXPECT_EQ(place_of(s), "network.node_links[0].node");
  NetworkSpec m = testing::full_mesh(3, link(B, L));
  m.pair_links = {PairLink{0, 1, link(B, L)}, PairLink{1, 1, link(B, L)}};
  EXPECT_EQ(place_of(m), "network.pair_links[1]");
  m.pair_links = {PairLink{0, 1, link(B, L)}, PairLink{1, 0, link(B, L)}};
  EXPECT_EQ(place_of(m), "network.pair_links[1]");  // listed twice
  NetworkSpec c = testing::two_clusters(2, 2, link(B, L), link(B, L));
  c.nodes = 5;
  EXPECT_EQ(place_of(c), "network.nodes");
  c.nodes = 4;
  c.wan = link(0, L);
  EXPECT_EQ(place_of(c), "network.wan.bandwidth");
  c.wan = link(B, L);
  EXPECT_EQ(place_of(c), "(accepted)");
}

}  // namespace
}  // namespace lowband::sim
