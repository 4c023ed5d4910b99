// Ring and direct collectives against their alpha-beta closed forms (ideal model).
#include <gtest/gtest.h>

#include <stdexcept>

#include "networks.h"
#include "sim/collectives.h"
#include "sim/replay.h"

namespace lowband::sim {
namespace {

using testing::first_ranks;
using testing::kTolerance;
using testing::link;

double replay_collective(const NetworkSpec& net, Collective c, int p, double bytes) {
  StepGraph g(net.nodes);
  append_collective(g, c, first_ranks(p), bytes, {}, "test");
  return replay(net, g).step_seconds;
}

class RingOnStar : public ::testing::TestWithParam<int> {};

TEST_P(RingOnStar, MatchesClosedForm) {
  // Star of 300 Mbps / 1 ms access links: a path has B = 37.5e6 B/s and L = 2 ms.
  // all-gather (p-1)(S/(pB) + L); all-reduce 2(p-1)(S/(pB) + L); reduce-scatter as all-gather.
  const int p = GetParam();
  const double S = 48e6, B = 37.5e6, L = 2e-3;
  const NetworkSpec net = testing::star(p, link(B, 1e-3));
  const double ag = (p - 1) * (S / (p * B) + L);
  EXPECT_NEAR(replay_collective(net, Collective::all_gather, p, S), ag, kTolerance * ag);
  EXPECT_NEAR(replay_collective(net, Collective::reduce_scatter, p, S), ag, kTolerance * ag);
  EXPECT_NEAR(replay_collective(net, Collective::all_reduce, p, S), 2 * ag, kTolerance * 2 * ag);
  EXPECT_NEAR(ring_all_reduce_seconds(p, S, B, L), 2 * ag, 1e-12 * ag);
}

INSTANTIATE_TEST_SUITE_P(P, RingOnStar, ::testing::Values(2, 3, 4, 8, 16, 32, 64));

class RingOverWan : public ::testing::TestWithParam<int> {};

TEST_P(RingOverWan, WanLinkIsTheBottleneck) {
  // Two clusters (p/2 and p - p/2 nodes, 100 Gbps / 5 us access links) joined by one
  // 1 Gbps / 10 ms WAN link. The ring crosses the WAN twice, in opposite directions of
  // the full-duplex link, so the crossings do not share it. Each round waits for the
  // slowest step, the crossing: path bandwidth min(B_access, B_wan) = B_wan, latency
  // 2 L_access + L_wan. Hence all-gather (p-1)(S/(p B_wan) + 2 L_access + L_wan) and
  // all-reduce twice that.
  const int p = GetParam();
  const double S = 64e6, Ba = 1.25e10, La = 5e-6, Bw = 1.25e8, Lw = 0.010;
  const NetworkSpec net = testing::two_clusters(p / 2, p - p / 2, link(Ba, La), link(Bw, Lw));
  const double ag = (p - 1) * (S / (p * Bw) + 2 * La + Lw);
  EXPECT_NEAR(replay_collective(net, Collective::all_gather, p, S), ag, kTolerance * ag);
  EXPECT_NEAR(replay_collective(net, Collective::all_reduce, p, S), 2 * ag, kTolerance * 2 * ag);
}

INSTANTIATE_TEST_SUITE_P(P, RingOverWan, ::testing::Values(2, 3, 4, 8, 16, 32, 64));

TEST(Collectives, SlowNodeSlowsExactlyTheRingStepsThroughIt) {
  // Star of 8, B = 1e8 B/s, L = 0.1 ms; node 3's access link at B/4. In round 0 only
  // 2->3 (its down link) and 3->4 (its up link) take 2L + (S/8)/(B/4); the other six take
  // 2L + (S/8)/B. The whole all-gather waits for the slow step every round: 7 slow steps.
  const double S = 8e6, B = 1e8, L = 1e-4;
  NetworkSpec net = testing::star(8, link(B, L));
  net.node_links.push_back(NodeLink{3, link(B / 4, L)});
  StepGraph g(8);
  ring_all_gather(g, first_ranks(8), S, {}, "test");
  const ReplayResult r = replay(net, g, ReplayOptions{true});
  const double fast = 2 * L + (S / 8) / B, slow = 2 * L + (S / 8) / (B / 4);
  for (int i = 0; i < 8; ++i) {  // tasks 0..7: round 0, sent by rank i
    const double expected = (i == 2 || i == 3) ? slow : fast;
    EXPECT_NEAR(r.task_finish_seconds[static_cast<size_t>(i)], expected, kTolerance * expected) << "sender " << i;
  }
  EXPECT_NEAR(r.step_seconds, 7 * slow, kTolerance * 7 * slow);
}

TEST(Collectives, AllToAllSharesStarLinksButNotMeshLinks) {
  // Each rank sends S/p to each of the p-1 others at once. Star: p-1 flows share each
  // access link: 2L + (p-1) S/(pB). Full mesh: every flow has its own link: L + S/(pB).
  const int p = 8;
  const double S = 8e6, B = 1e8, L = 1e-3;
  const double star_t = 2 * L + (p - 1) * S / (p * B), mesh_t = L + S / (p * B);
  EXPECT_NEAR(replay_collective(testing::star(p, link(B, L)), Collective::all_to_all, p, S), star_t,
              kTolerance * star_t);
  EXPECT_NEAR(replay_collective(testing::full_mesh(p, link(B, L)), Collective::all_to_all, p, S), mesh_t,
              kTolerance * mesh_t);
  EXPECT_NEAR(expected_seconds(Collective::all_to_all, testing::star(p, link(B, L)), p, S), star_t, 1e-12);
}

TEST(Collectives, DirectAllReduceIsTwoAllToAllsWithTwoLatencies) {
  // Star: 2 (2L + (p-1) S/(pB)); full mesh: 2 (L + S/(pB)); the ring on the star:
  // 2 (p-1)(2L + S/(pB)), the same bytes through each link but 2(p-1) latencies.
  const int p = 8;
  const double S = 8e6, B = 1e8, L = 1e-3;
  for (const bool mesh : {false, true}) {
    const NetworkSpec net = mesh ? testing::full_mesh(p, link(B, L)) : testing::star(p, link(B, L));
    StepGraph g(p);
    direct_all_reduce(g, first_ranks(p), S, {}, "test");
    const double expected = direct_all_reduce_seconds(p, S, B, mesh ? L : 2 * L, mesh ? 1 : p - 1);
    EXPECT_NEAR(replay(net, g).step_seconds, expected, kTolerance * expected) << (mesh ? "mesh" : "star");
    EXPECT_EQ(g.bytes_sent(0, ""), 2 * (p - 1) * S / p);  // as the ring's
  }
  EXPECT_NEAR(direct_all_reduce_seconds(p, S, B, 2 * L, p - 1), 2 * (2 * L + (p - 1) * S / (p * B)), 1e-15);
  EXPECT_LT(direct_all_reduce_seconds(p, S, B, 2 * L, p - 1), ring_all_reduce_seconds(p, S, B, 2 * L));
}

TEST(Collectives, PointToPointAndStartDependencies) {
  // p2p 0->1 after a 5 ms compute on rank 0: 5 ms + 2L + S/B = 5 + 2 + 10 = 17 ms.
  StepGraph g(2);
  const TaskId before = g.add_compute(0, 0.005, {}, "mlp");
  const auto joins = point_to_point(g, {0, 1}, 1e6, {{before}, {}}, "act");
  ASSERT_EQ(joins.size(), 2u);
  const ReplayResult r = replay(testing::star(2, link(1e8, 1e-3)), g, ReplayOptions{true});
  EXPECT_NEAR(r.task_finish_seconds[static_cast<size_t>(joins[1])], 0.017, kTolerance * 0.017);
  EXPECT_NEAR(point_to_point_seconds(1e6, 1e8, 2e-3), 0.012, 1e-15);
}

TEST(Collectives, JoinsFollowEachRanksLastTransfer) {
  // One rank: no transfers, the join finishes with the start dependency (a 1 s compute).
  StepGraph g(1);
  const TaskId c = g.add_compute(0, 1.0, {}, "x");
  const auto joins = ring_all_reduce(g, {0}, 1e6, {{c}}, "grad_sync");
  const ReplayResult r = replay(testing::star(1, link(1e8, 1e-3)), g, ReplayOptions{true});
  EXPECT_NEAR(r.task_finish_seconds[static_cast<size_t>(joins[0])], 1.0, kTolerance);
  // Bytes on the wire per rank for an all-reduce over 4: 2 (p-1) S/p = 1.5 S.
  StepGraph h(4);
  ring_all_reduce(h, first_ranks(4), 4e6, {}, "grad_sync");
  EXPECT_DOUBLE_EQ(h.bytes_sent(2, "grad_sync"), 6e6);
}

TEST(Collectives, BadArgumentsAreRejected) {
  StepGraph g(4);
  EXPECT_THROW(ring_all_gather(g, {}, 1e6, {}, "x"), std::invalid_argument);
  EXPECT_THROW(ring_all_gather(g, {0, 1, 1}, 1e6, {}, "x"), std::invalid_argument);
  EXPECT_THROW(ring_all_gather(g, {0, 1}, -1, {}, "x"), std::invalid_argument);
  EXPECT_THROW(ring_all_gather(g, {0, 1}, 1e6, {{}}, "x"), std::invalid_argument);
  EXPECT_THROW(point_to_point(g, {0, 1, 2}, 1e6, {}, "x"), std::invalid_argument);
  EXPECT_THROW(ring_all_gather(g, {0, 7}, 1e6, {}, "x"), std::invalid_argument);  // rank outside the graph
}

TEST(Collectives, BusBandwidthFactorsAreNcclTests) {
  // all-reduce 2(p-1)/p, all-gather / reduce-scatter / all-to-all (p-1)/p, p2p 1; p = 8.
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 8), 14.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_gather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::reduce_scatter, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_to_all, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::p2p, 8), 1.0);
}

}  // namespace
}  // namespace lowband::sim
