// The physical bound (sim/bound.h) against closed forms: the bytes each link must
// carry, the chain of latencies, and never more than the replay.
#include <gtest/gtest.h>

#include "networks.h"
#include "sim/bound.h"
#include "sim/collectives.h"
#include "sim/replay.h"

namespace lowband::sim {
namespace {

using testing::first_ranks;
using testing::kTolerance;
using testing::link;

BusiestLink busiest(const NetworkSpec& net, const StepGraph& g, double weight = 1) {
  const NetworkLinks links(net);
  LinkLoad load;
  add_link_load(links, g, weight, load);
  return busiest_link(links, load);
}

TEST(Bound, OneSendOnAStarIsItsBytesOverTheBandwidth) {
  const double X = 30e6, B = 37.5e6;  // 300 Mbps
  const NetworkSpec net = testing::star(3, link(B, 1e-3));
  StepGraph g(3);
  g.add_transfer(1, 2, X, {}, "kv");
  g.add_transfer(0, 2, X / 2, {}, "grad_sync");
  const BusiestLink b = busiest(net, g);  // node 2's downlink carries 1.5 X
  EXPECT_EQ(b.name, "node 2's downlink");
  EXPECT_DOUBLE_EQ(b.bytes, 1.5 * X);
  EXPECT_DOUBLE_EQ(b.seconds, 1.5 * X / B);
  std::map<std::string, double> kinds;
  add_link_bytes_by_kind(NetworkLinks(net), g, b.link, 2.0, kinds);
  EXPECT_EQ(kinds, (std::map<std::string, double>{{"grad_sync", X}, {"kv", 2 * X}}));
  StepGraph one(3);
  one.add_transfer(1, 2, X, {}, "kv");
  EXPECT_EQ(busiest(net, one).name, "node 1's uplink");  // node 2's downlink carries as much: the first
  EXPECT_DOUBLE_EQ(busiest(net, one).seconds, X / B);
  EXPECT_DOUBLE_EQ(latency_chain_seconds(NetworkLinks(net), one), 2e-3);
  // The replay is exactly L + X/B: the two bounds sum to it.
  EXPECT_NEAR(replay(net, one).step_seconds, X / B + 2e-3, kTolerance * (X / B));
}

TEST(Bound, ATransferWithinANodeCrossesNoLink) {
  StepGraph g(2);
  g.add_transfer(1, 1, 1e9, {}, "kv");
  const BusiestLink b = busiest(testing::star(2, link(1e6, 1e-3)), g);
  EXPECT_EQ(b.link, -1);
  EXPECT_EQ(b.seconds, 0);
  EXPECT_EQ(latency_chain_seconds(NetworkLinks(testing::star(2, link(1e6, 1e-3))), g), 0);
}

TEST(Bound, UploadAndDownloadAreTheirOwnLinks) {
  // Node 0 uploads at 10 MB/s, downloads at 100 MB/s: 0 -> 1 is bounded by its upload.
  NetworkSpec net = testing::star(2, link(1e8, 1e-3));
  net.node_links = {NodeLink{0, Link{1e8, 1e-3, 1e7}}};
  StepGraph g(2);
  g.add_transfer(0, 1, 5e7, {}, "x");
  g.add_transfer(1, 0, 5e7, {}, "x");
  const BusiestLink b = busiest(net, g);
  EXPECT_EQ(b.name, "node 0's uplink");
  EXPECT_DOUBLE_EQ(b.seconds, 5.0);
  EXPECT_LE(b.seconds, replay(net, g).step_seconds);
}

class RingBound : public ::testing::TestWithParam<int> {};

TEST_P(RingBound, RingAllGatherOnAStarCarriesItsClosedForm) {
  // Each uplink carries (p-1)/p S; the ring's p-1 rounds chain p-1 path latencies.
  // Together they are the closed form (p-1)(S/(pB) + L) exactly.
  const int p = GetParam();
  const double S = 48e6, B = 37.5e6, L = 2e-3;
  const NetworkSpec net = testing::star(p, link(B, L / 2));
  StepGraph g(p);
  ring_all_gather(g, first_ranks(p), S, {}, "grad_sync");
  const BusiestLink b = busiest(net, g);
  EXPECT_NEAR(b.bytes, (p - 1) * S / p, 1e-9 * S);
  EXPECT_NEAR(b.seconds, (p - 1) * S / (p * B), 1e-12 * S / B);
  const double chain = latency_chain_seconds(NetworkLinks(net), g);
  EXPECT_NEAR(chain, (p - 1) * L, 1e-15);
  EXPECT_NEAR(b.seconds + chain, ring_all_gather_seconds(p, S, B, L), 1e-9);
  const double replayed = replay(net, g).step_seconds;
  EXPECT_LE(b.seconds, replayed);
  EXPECT_LE(chain, replayed);
  // All-reduce: twice the bytes and twice the chain.
  StepGraph r(p);
  ring_all_reduce(r, first_ranks(p), S, {}, "grad_sync");
  EXPECT_NEAR(busiest(net, r).seconds, 2 * (p - 1) * S / (p * B), 1e-12 * S / B);
  EXPECT_NEAR(latency_chain_seconds(NetworkLinks(net), r), 2 * (p - 1) * L, 1e-15);
}

INSTANTIATE_TEST_SUITE_P(P, RingBound, ::testing::Values(2, 3, 4, 8, 16));

TEST(Bound, FullMeshLinksArePerPairAndDirection) {
  const NetworkSpec net = testing::full_mesh(4, link(1e7, 1e-3));
  StepGraph g(4);
  g.add_transfer(0, 1, 2e7, {}, "x");
  g.add_transfer(1, 0, 1e7, {}, "x");
  g.add_transfer(0, 2, 1e7, {}, "x");
  const BusiestLink b = busiest(net, g);
  EXPECT_EQ(b.name, "link 0->1");
  EXPECT_DOUBLE_EQ(b.seconds, 2.0);
  EXPECT_DOUBLE_EQ(latency_chain_seconds(NetworkLinks(net), g), 1e-3);  // one link per path
}

TEST(Bound, ClustersRouteOverTheWanLink) {
  // Two clusters of 2 at 1 GB/s, joined by 10 MB/s: 0 -> 2 and 1 -> 3 share the WAN.
  const NetworkSpec net = testing::two_clusters(2, 2, link(1e9, 1e-5), link(1e7, 0.01));
  StepGraph g(4);
  g.add_transfer(0, 2, 1e7, {}, "x");
  g.add_transfer(1, 3, 1e7, {}, "x");
  const BusiestLink b = busiest(net, g);
  EXPECT_EQ(b.name, "WAN cluster 0->1");
  EXPECT_DOUBLE_EQ(b.bytes, 2e7);
  EXPECT_DOUBLE_EQ(b.seconds, 2.0);
  EXPECT_NEAR(latency_chain_seconds(NetworkLinks(net), g), 0.01 + 2e-5, 1e-15);
  EXPECT_LE(b.seconds, replay(net, g).step_seconds);
}

TEST(Bound, ExplicitLinksBoundEachNodesCut) {
  // A line 0 - 1 - 2 at 10 MB/s, 1 ms per link: node 1 may send 20 MB/s out, node 2
  // take in 10 MB/s.
  NetworkSpec net;
  net.topology = Topology::explicit_links;
  net.nodes = 3;
  net.pair_links = {PairLink{0, 1, link(1e7, 1e-3)}, PairLink{1, 2, link(1e7, 1e-3)}};
  StepGraph g(3);
  g.add_transfer(0, 2, 1e7, {}, "x");  // leaves node 0's cut (10 MB/s): 1 s
  g.add_transfer(1, 0, 1e7, {}, "x");
  g.add_transfer(1, 2, 1e7, {}, "x");  // node 1 sends 20 MB over 20 MB/s: 1 s
  const BusiestLink b = busiest(net, g);  // node 2 takes in 20 MB over 10 MB/s: 2 s
  EXPECT_DOUBLE_EQ(b.seconds, 2.0);
  EXPECT_EQ(b.name, "node 2's links in");
  EXPECT_DOUBLE_EQ(latency_chain_seconds(NetworkLinks(net), g), 2e-3);  // 0 -> 2: two links
  EXPECT_LE(b.seconds, replay(net, g).step_seconds);
}

TEST(Bound, ExplicitLinksBoundEachListedPairsOwnLink) {
  // A triangle whose 0 - 1 link is slow (1 MB/s, the rest 10 MB/s): 0 -> 1 takes that
  // link, however fast the nodes' other links are (their cuts: 11 MB/s).
  NetworkSpec net;
  net.topology = Topology::explicit_links;
  net.nodes = 3;
  net.pair_links = {PairLink{0, 1, link(1e6, 1e-3)}, PairLink{1, 2, link(1e7, 1e-3)},
                    PairLink{0, 2, link(1e7, 1e-3)}};
  StepGraph g(3);
  g.add_transfer(0, 1, 1e6, {}, "x");
  g.add_transfer(1, 2, 1e6, {}, "x");
  const BusiestLink b = busiest(net, g);
  EXPECT_EQ(b.name, "link 0->1");
  EXPECT_DOUBLE_EQ(b.seconds, 1.0);
  const double step = replay(net, g).step_seconds;
  EXPECT_LE(b.seconds, step);
  EXPECT_NEAR(step, 1.0 + 1e-3, 1e-6);  // the replay crosses that link: the bound is tight
}

TEST(Bound, ChainsFollowDependenciesAndWeightsScaleBytes) {
  const NetworkSpec net = testing::star(2, link(1e7, 1e-3));
  StepGraph g(2);
  const TaskId a = g.add_transfer(0, 1, 1e7, {}, "x");
  const TaskId c = g.add_compute(1, 5.0, {a}, "mlp");  // compute is free in the chain
  g.add_transfer(1, 0, 1e7, {c}, "x");
  EXPECT_DOUBLE_EQ(latency_chain_seconds(NetworkLinks(net), g), 4e-3);
  EXPECT_DOUBLE_EQ(busiest(net, g, 0.25).seconds, 0.25);
}

}  // namespace
}  // namespace lowband::sim
