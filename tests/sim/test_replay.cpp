// sim::replay against closed forms under the ideal (alpha-beta) model.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "networks.h"
#include "sim/replay.h"
#include "tests/temp_dir.h"

namespace lowband::sim {
namespace {

using testing::kTolerance;
using testing::link;

constexpr double B = 1e8;   // bytes/s per link (800 Mbps)
constexpr double L = 1e-3;  // s per link
constexpr double S = 1e6;   // bytes

TEST(Replay, OneTransferOnStarCrossesTwoAccessLinks) {
  // Expectation: 2L + S/B = 2 ms + 10 ms = 12 ms (up the sender's link, down the receiver's).
  StepGraph g(2);
  g.add_transfer(0, 1, S, {}, "kv");
  const ReplayResult r = replay(testing::star(2, link(B, L)), g);
  EXPECT_NEAR(r.step_seconds, 2 * L + S / B, kTolerance * 0.012);
  EXPECT_NEAR(r.rank_finish_seconds[0], 0.012, kTolerance * 0.012);
  EXPECT_NEAR(r.rank_finish_seconds[1], 0.012, kTolerance * 0.012);
}

TEST(Replay, OneTransferOnFullMeshCrossesOneLink) {
  // Expectation: L + S/B = 11 ms.
  StepGraph g(3);
  g.add_transfer(2, 0, S, {}, "kv");
  const ReplayResult r = replay(testing::full_mesh(3, link(B, L)), g);
  EXPECT_NEAR(r.step_seconds, 0.011, kTolerance * 0.011);
}

TEST(Replay, TwoFlowsIntoOneNodeShareItsLinkHalfEach) {
  // 0->2 and 1->2 both cross node 2's down link: each gets B/2, so both end at 2L + 2S/B = 22 ms.
  StepGraph g(3);
  g.add_transfer(0, 2, S, {}, "kv");
  g.add_transfer(1, 2, S, {}, "kv");
  const ReplayResult r = replay(testing::star(3, link(B, L)), g, ReplayOptions{true});
  EXPECT_NEAR(r.task_finish_seconds[0], 0.022, kTolerance * 0.022);
  EXPECT_NEAR(r.task_finish_seconds[1], 0.022, kTolerance * 0.022);
}

TEST(Replay, OppositeFlowsDoNotShareAFullDuplexLink) {
  // 0->1 and 1->0 use opposite directions of each access link: each alone, 2L + S/B = 12 ms.
  StepGraph g(2);
  g.add_transfer(0, 1, S, {}, "kv");
  g.add_transfer(1, 0, S, {}, "kv");
  const ReplayResult star = replay(testing::star(2, link(B, L)), g);
  EXPECT_NEAR(star.step_seconds, 0.012, kTolerance * 0.012);
  // Full mesh: one pair link, also full duplex: L + S/B = 11 ms.
  const ReplayResult mesh = replay(testing::full_mesh(2, link(B, L)), g);
  EXPECT_NEAR(mesh.step_seconds, 0.011, kTolerance * 0.011);
}

TEST(Replay, IndependentComputeAndTransferOverlap) {
  // Transfer 12 ms and an independent 20 ms compute on the sender: max, not sum: 20 ms.
  StepGraph g(2);
  g.add_transfer(0, 1, S, {}, "kv");
  g.add_compute(0, 0.020, {}, "attention");
  const ReplayResult r = replay(testing::star(2, link(B, L)), g);
  EXPECT_NEAR(r.step_seconds, 0.020, kTolerance * 0.020);
  // All communication hidden on rank 0; rank 1 only receives (12 ms exposed there).
  EXPECT_NEAR(r.rank_compute_busy_seconds[0], 0.020, kTolerance * 0.020);
  EXPECT_NEAR(r.rank_exposed_comm_seconds[0], 0.0, 1e-9);
  EXPECT_NEAR(r.rank_exposed_comm_seconds[1], 0.012, kTolerance * 0.012);
  EXPECT_NEAR(r.exposed_comm_seconds, 0.0, 1e-9);

  // A 5 ms compute instead: the step is the transfer's 12 ms, 7 ms of it exposed.
  StepGraph h(2);
  h.add_transfer(0, 1, S, {}, "kv");
  h.add_compute(0, 0.005, {}, "attention");
  const ReplayResult s = replay(testing::star(2, link(B, L)), h);
  EXPECT_NEAR(s.step_seconds, 0.012, kTolerance * 0.012);
  EXPECT_NEAR(s.exposed_comm_seconds, 0.007, kTolerance * 0.007);
}

TEST(Replay, DependencyChainAddsUp) {
  // compute 10 ms on 0 -> transfer 12 ms -> compute 3 ms on 1: 25 ms in total.
  StepGraph g(2);
  const TaskId a = g.add_compute(0, 0.010, {}, "mlp");
  const TaskId t = g.add_transfer(0, 1, S, {a}, "kv");
  g.add_compute(1, 0.003, {t}, "attention");
  const ReplayResult r = replay(testing::star(2, link(B, L)), g, ReplayOptions{true});
  EXPECT_NEAR(r.step_seconds, 0.025, kTolerance * 0.025);
  EXPECT_NEAR(r.task_start_seconds[t], 0.010, kTolerance * 0.010);
  EXPECT_NEAR(r.rank_finish_seconds[0], 0.022, kTolerance * 0.022);
  // Exposed: step - largest compute busy (10 ms) = 15 ms.
  EXPECT_NEAR(r.exposed_comm_seconds, 0.015, kTolerance * 0.015);
}

TEST(Replay, ReadyComputeTasksShareTheirRank) {
  // Two 1 s computes ready together on one rank run at half speed each: both end at 2 s.
  StepGraph g(1);
  g.add_compute(0, 1.0, {}, "a");
  g.add_compute(0, 1.0, {}, "b");
  const ReplayResult r = replay(testing::star(1, link(B, L)), g, ReplayOptions{true});
  EXPECT_NEAR(r.task_finish_seconds[0], 2.0, kTolerance * 2);
  EXPECT_NEAR(r.task_finish_seconds[1], 2.0, kTolerance * 2);
  EXPECT_NEAR(r.rank_compute_busy_seconds[0], 2.0, kTolerance * 2);
}

TEST(Replay, ComputeSharingFollowsArrivals) {
  // Rank 0: A (1 s) from 0; B (1 s) arrives at 0.5 s, after C (0.5 s) on rank 1.
  // A alone to 0.5 s (0.5 s left), then both at half speed: A ends at 1.5 s, when B has
  // 0.5 s left, which it runs alone: B ends at 2.0 s. Rank 0 is busy 0..2 s.
  StepGraph g(2);
  const TaskId a = g.add_compute(0, 1.0, {}, "a");
  const TaskId c = g.add_compute(1, 0.5, {}, "c");
  const TaskId b = g.add_compute(0, 1.0, {c}, "b");
  const ReplayResult r = replay(testing::star(2, link(B, L)), g, ReplayOptions{true});
  EXPECT_NEAR(r.task_finish_seconds[static_cast<size_t>(a)], 1.5, kTolerance * 1.5);
  EXPECT_NEAR(r.task_start_seconds[static_cast<size_t>(b)], 0.5, kTolerance * 0.5);
  EXPECT_NEAR(r.task_finish_seconds[static_cast<size_t>(b)], 2.0, kTolerance * 2.0);
  EXPECT_NEAR(r.rank_compute_busy_seconds[0], 2.0, kTolerance * 2.0);
  EXPECT_NEAR(r.rank_compute_busy_seconds[1], 0.5, kTolerance * 0.5);
}

TEST(Replay, SelfTransferIsFreeAndEmptyMessageCostsLatency) {
  // 0->0 moves nothing over the network: 0 s. An empty 0->1 message still pays 2L = 2 ms.
  StepGraph g(2);
  g.add_transfer(0, 0, 1e9, {}, "kv");
  const ReplayResult self = replay(testing::star(2, link(B, L)), g);
  EXPECT_EQ(self.step_seconds, 0.0);
  StepGraph h(2);
  h.add_transfer(0, 1, 0, {}, "kv");
  const ReplayResult empty = replay(testing::star(2, link(B, L)), h);
  EXPECT_NEAR(empty.step_seconds, 0.002, kTolerance * 0.002);
}

TEST(Replay, RepeatedReplaysInOneProcessAreIndependent) {
  // Different networks and models one after the other, each giving its own closed form:
  // star 2L + S/B = 12 ms; mesh at B/4 and 5L: 5 ms + 40 ms = 45 ms; tcp differs; star again 12 ms.
  StepGraph g(2);
  g.add_transfer(0, 1, S, {}, "kv");
  const double first = replay(testing::star(2, link(B, L)), g).step_seconds;
  const double mesh = replay(testing::full_mesh(2, link(B / 4, 5 * L)), g).step_seconds;
  const double tcp = replay(testing::star(2, link(B, L), NetworkModel::tcp), g).step_seconds;
  const double again = replay(testing::star(2, link(B, L)), g).step_seconds;
  EXPECT_NEAR(first, 0.012, kTolerance * 0.012);
  EXPECT_NEAR(mesh, 0.045, kTolerance * 0.045);
  EXPECT_GT(std::fabs(tcp / 0.012 - 1), 0.01);
  EXPECT_EQ(again, first);
}

TEST(Replay, BatchReplaysEachGraphFromAnIdleNetwork) {
  // Graph 1: one transfer (12 ms). Graph 2: two flows into node 2 (22 ms), starting at its own time 0.
  std::vector<StepGraph> graphs(2, StepGraph(3));
  graphs[0].add_transfer(0, 1, S, {}, "kv");
  graphs[1].add_transfer(0, 2, S, {}, "kv");
  graphs[1].add_transfer(1, 2, S, {}, "kv");
  const auto r = replay_batch(testing::star(3, link(B, L)), graphs);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NEAR(r[0].step_seconds, 0.012, kTolerance * 0.012);
  EXPECT_NEAR(r[1].step_seconds, 0.022, kTolerance * 0.022);
}

TEST(Replay, TcpModelIsSlowerOnLongLinksAndCopesWithLargeTransfers) {
  // 20 ms links, 10 Gbps, 1 GB: ideal is 2L + S/B = 40 ms + 800 ms. LV08's latency factor and TCP
  // window (4 MiB per round trip) make it slower; it must finish (no crash) and be finite.
  StepGraph g(2);
  g.add_transfer(0, 1, 1e9, {}, "grad_sync");
  const double ideal = replay(testing::star(2, link(1.25e9, 0.020)), g).step_seconds;
  const double tcp = replay(testing::star(2, link(1.25e9, 0.020), NetworkModel::tcp), g).step_seconds;
  EXPECT_NEAR(ideal, 0.840, kTolerance * 0.840);
  EXPECT_TRUE(std::isfinite(tcp));
  EXPECT_GT(tcp, 1.5 * ideal);
  // Larger still: 10 GB over 50 ms links on a full mesh, both models.
  StepGraph h(2);
  h.add_transfer(0, 1, 1e10, {}, "grad_sync");
  h.add_transfer(1, 0, 1e10, {}, "grad_sync");
  const double big_ideal = replay(testing::full_mesh(2, link(1.25e9, 0.050)), h).step_seconds;
  const double big_tcp = replay(testing::full_mesh(2, link(1.25e9, 0.050), NetworkModel::tcp), h).step_seconds;
  EXPECT_NEAR(big_ideal, 0.050 + 8.0, kTolerance * 8.05);
  EXPECT_TRUE(std::isfinite(big_tcp));
  EXPECT_GT(big_tcp, big_ideal);
}

TEST(Replay, MoreRanksThanNodesIsAnInputError) {
  StepGraph g(4);
  g.add_transfer(0, 3, S, {}, "kv");
  try {
    replay(testing::star(2, link(B, L)), g);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "network.nodes");
  }
}

TEST(Replay, CallersBufferedOutputIsWrittenOnce) {
  // The child process must not flush a copy of the caller's stdio buffer: "before" once.
  // A directory of this process: a fixed file name would be shared with the same test
  // running at once from another build directory, truncated under it mid-test.
  const std::filesystem::path dir = test_support::unique_test_temp_dir("lowband");
  const std::string path = (dir / "stdout.txt").string();
  std::fflush(stdout);
  const int saved = ::dup(STDOUT_FILENO);
  ASSERT_TRUE(std::freopen(path.c_str(), "w", stdout));
  std::printf("before");  // left in the (fully buffered) stdio buffer
  StepGraph g(2);
  g.add_transfer(0, 1, S, {}, "kv");
  replay(testing::star(2, link(B, L)), g);
  std::fflush(stdout);
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove_all(dir);
  EXPECT_EQ(text.str(), "before");
}

TEST(Replay, EmptyGraphTakesNoTime) {
  // No tasks: every rank finishes at 0.
  const ReplayResult r = replay(testing::star(3, link(B, L)), StepGraph(3));
  EXPECT_EQ(r.step_seconds, 0.0);
  EXPECT_EQ(r.rank_finish_seconds, std::vector<double>(3, 0.0));
}

}  // namespace
}  // namespace lowband::sim

namespace lowband::sim {
namespace {

TEST(Replay, FifoMessageOrderQueuesOneKindBetweenOnePair) {
  // Two kv messages 0 -> 1 ready at once, and a grad_sync one. concurrent: three
  // flows share the path (each B/3). fifo: the kv messages one after the other,
  // the grad_sync one a stream of its own beside them (B/2 each while both move).
  StepGraph g(2);
  g.add_transfer(0, 1, S, {}, "kv");
  g.add_transfer(0, 1, S, {}, "kv");
  g.add_transfer(0, 1, S, {}, "grad_sync");
  ReplayOptions options;
  options.task_times = true;
  NetworkSpec net = testing::star(2, link(B, L));
  const ReplayResult shared = replay(net, g, options);
  for (int t = 0; t < 3; ++t) EXPECT_NEAR(shared.task_finish_seconds[size_t(t)], 2 * L + 3 * S / B, 1e-9);
  net.message_order = MessageOrder::fifo;
  const ReplayResult fifo = replay(net, g, options);
  // One kv message and the grad_sync one move together at B/2: both end at
  // 2L + 2S/B; then the other kv message alone at B (which kv goes first is the
  // replay's choice between tasks ready at once).
  const double first_kv = std::min(fifo.task_finish_seconds[0], fifo.task_finish_seconds[1]);
  const double second_kv = std::max(fifo.task_finish_seconds[0], fifo.task_finish_seconds[1]);
  EXPECT_NEAR(first_kv, 2 * L + 2 * S / B, 1e-9);
  EXPECT_NEAR(fifo.task_finish_seconds[2], 2 * L + 2 * S / B, 1e-9);
  EXPECT_NEAR(second_kv, 2 * L + 3 * S / B, 1e-9);
}

}  // namespace
}  // namespace lowband::sim
