// sim::RunClock: a run's steps on one clock, and network.restart's restarts from
// the last checkpoint, against their closed forms.
#include <gtest/gtest.h>

#include "common/error.h"
#include "networks.h"
#include "sim/run_clock.h"

namespace lowband::sim {
namespace {

using testing::link;

constexpr double B = 1e8;   // bytes/s per link
constexpr double L = 1e-3;  // s per link

TraceSpec steps(std::vector<TracePoint> points) {
  TraceSpec t;
  t.kind = TraceSpec::Kind::points;
  t.points = std::move(points);
  return t;
}

// 100 s of compute on node 1; node 1 down from 150 s to 650 s (during the second step).
StepGraph compute_step() {
  StepGraph g(2);
  g.add_compute(1, 100.0, {}, "mlp");
  return g;
}

NetworkSpec node_1_down(double from, double to) {
  NetworkSpec net = testing::star(2, link(B, L));
  net.dynamics = {{{DynamicTarget::Kind::node, 1, -1}, DynamicQuantity::state, steps({{from, 0}, {to, 1}})}};
  return net;
}

std::vector<ClockedStep> three_steps(const NetworkSpec& net, int checkpoint_every) {
  const StepGraph g = compute_step();
  RunClock clock(net, checkpoint_every);
  return clock.replay({&g, &g, &g}, 0.0);
}

TEST(RunClock, WithoutRestartAStepWaitsOutTheOutage) {
  const std::vector<ClockedStep> r = three_steps(node_1_down(150, 650), 2);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_NEAR(r[0].seconds, 100, 1e-9);
  EXPECT_NEAR(r[1].seconds, 100 + 500, 1e-9);
  EXPECT_NEAR(r[2].seconds, 100, 1e-9);
  for (const ClockedStep& s : r) EXPECT_EQ(s.restarts, 0);
}

TEST(RunClock, RestartsFromTheLastCheckpointUntilTheNodeIsBack) {
  // Timeout T = 60 s, relaunch R = 30 s. Step 2 stalls at 150, gives up at 210; the
  // run relaunches at 240 and redoes step 1 (no checkpoint since the start: every
  // 2 steps), which stalls at once: gives up at 300, 390, 480, 570. Relaunched at
  // 600, it stalls until the node is back at 650 (< 600 + T): step 1 ends at 750,
  // step 2 at 850, step 3 at 950.
  NetworkSpec net = node_1_down(150, 650);
  net.restart = RestartPolicy{60, 30};
  std::vector<ClockedStep> r = three_steps(net, 2);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_NEAR(r[0].seconds, 100, 1e-9);
  EXPECT_NEAR(r[1].seconds, 850 - 100, 1e-9);  // the restarts and the redone step 1 are step 2's
  EXPECT_NEAR(r[2].seconds, 100, 1e-9);
  EXPECT_EQ(r[0].restarts, 0);
  EXPECT_EQ(r[1].restarts, 5);
  EXPECT_EQ(r[2].restarts, 0);
  EXPECT_FALSE(r[1].replay.gave_up);

  // A checkpoint after every step: only step 2 is redone, from 240 on the same
  // schedule, ending 100 s after the node is back.
  r = three_steps(net, 1);
  EXPECT_NEAR(r[1].seconds, 750 - 100, 1e-9);
  EXPECT_EQ(r[1].restarts, 5);
  EXPECT_NEAR(r[2].seconds, 100, 1e-9);

  // An outage shorter than the timeout: the step waits, as without a policy.
  r = three_steps(node_1_down(150, 200), 2);
  net = node_1_down(150, 200);
  net.restart = RestartPolicy{60, 30};
  const std::vector<ClockedStep> waited = three_steps(net, 2);
  EXPECT_NEAR(waited[1].seconds, 150, 1e-9);
  EXPECT_NEAR(waited[1].seconds, r[1].seconds, 1e-9);
  EXPECT_EQ(waited[1].restarts, 0);
}

TEST(RunClock, ATransferOnADownLinkStallsAndRestarts) {
  // S bytes 0 -> 1 (2L latency, then S/B); every link down from 5 ms to 10.005 s.
  // Each attempt from date a pays its latency, stalls at a + 2L, gives up T later
  // and relaunches R after that; the first stalls mid-transfer at 5 ms.
  const double S = 1e6, T = 1, R = 0.4, up = 10.005;
  StepGraph g(2);
  g.add_transfer(0, 1, S, {}, "kv");
  NetworkSpec net = testing::star(2, link(B, L));
  net.dynamics = {{{}, DynamicQuantity::state, steps({{0.005, 0}, {up, 1}})}};
  net.restart = RestartPolicy{T, R};
  double start = 0.005 + T + R;  // the first relaunch
  int restarts = 1;
  while (start + 2 * L + T < up) start += 2 * L + T + R, ++restarts;
  RunClock clock(net, 1);
  const std::vector<ClockedStep> r = clock.replay({&g}, 0.0);
  EXPECT_EQ(r[0].restarts, restarts);
  EXPECT_GE(restarts, 7);
  EXPECT_NEAR(r[0].seconds, up + S / B, 1e-9);
}

TEST(RunClock, ARestartRedoesStepsReplayedInAnEarlierCall) {
  // A run replays its steps a few at a time: the steps since the checkpoint kept
  // from an earlier call are redone as if replayed in one.
  NetworkSpec net = node_1_down(150, 650);
  net.restart = RestartPolicy{60, 30};
  const StepGraph g = compute_step();
  RunClock whole(net, 3), split(net, 3);
  const std::vector<ClockedStep> a = whole.replay({&g, &g, &g}, 0.0);
  std::vector<ClockedStep> b = split.replay({&g}, 0.0);
  const std::vector<ClockedStep> rest = split.replay({&g, &g}, b[0].seconds);
  b.insert(b.end(), rest.begin(), rest.end());
  ASSERT_EQ(b.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(b[i].seconds, a[i].seconds) << "step " << i + 1;
    EXPECT_EQ(b[i].restarts, a[i].restarts) << "step " << i + 1;
  }
  EXPECT_NEAR(a[1].seconds, 850 - 100, 1e-9);
}

TEST(RunClock, ANodeThatNeverComesBackIsAnInputErrorNotEndlessRestarts) {
  NetworkSpec net = testing::star(2, link(B, L));
  net.dynamics = {{{DynamicTarget::Kind::node, 1, -1}, DynamicQuantity::state, steps({{150, 0}})}};
  net.restart = RestartPolicy{60, 30};
  const StepGraph g = compute_step();
  RunClock clock(net, 1);
  try {
    clock.replay({&g, &g}, 0.0);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "network.dynamics");
  }
}

TEST(RunClock, ARestartPolicyWithoutAStateTraceIsAnInputError) {
  NetworkSpec net = testing::star(2, link(B, L));
  net.dynamics = {{{}, DynamicQuantity::bandwidth, steps({{1, 0.5}})}};
  net.restart = RestartPolicy{60, 30};
  const StepGraph g = compute_step();
  RunClock clock(net, 1);
  try {
    clock.replay({&g}, 0.0);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "network.restart");
  }
}

}  // namespace
}  // namespace lowband::sim
