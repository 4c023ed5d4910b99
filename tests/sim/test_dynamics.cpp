// network.dynamics: traces, and the replay on a changing network against closed forms.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "networks.h"
#include "sim/dynamics.h"
#include "sim/replay.h"

namespace lowband::sim {
namespace {

using testing::link;

constexpr double B = 1e8;   // bytes/s per link
constexpr double L = 1e-3;  // s per link
constexpr double S = 1e6;   // bytes: 10 ms at B

TraceSpec steps(std::vector<TracePoint> points) {
  TraceSpec t;
  t.kind = TraceSpec::Kind::points;
  t.points = std::move(points);
  return t;
}

NetworkDynamic dynamic(DynamicQuantity q, TraceSpec trace, DynamicTarget target = {}) {
  return NetworkDynamic{target, q, std::move(trace)};
}

DynamicTarget node(int n) { return {DynamicTarget::Kind::node, n, -1}; }

// A graph with compute, sharing and transfers both ways: every part of the replay.
StepGraph busy_graph() {
  StepGraph g(3);
  const TaskId a = g.add_compute(0, 0.004, {}, "mlp");
  const TaskId t = g.add_transfer(0, 1, S, {a}, "kv");
  g.add_transfer(2, 1, 2 * S, {}, "kv");
  const TaskId c = g.add_compute(1, 0.003, {t}, "attention");
  g.add_transfer(1, 0, S / 2, {c}, "kv");
  g.add_compute(2, 0.001, {}, "mlp");
  return g;
}

TEST(Trace, PointsHoldEachValueFromItsTime) {
  Trace t(steps({{10, 0.5}, {20, 2}}));
  EXPECT_EQ(t.value_at(0), 1);
  EXPECT_EQ(t.value_at(10), 0.5);
  EXPECT_EQ(t.value_at(19.9), 0.5);
  EXPECT_EQ(t.value_at(1e9), 2);
  EXPECT_EQ(t.next_change_after(0), 10);
  EXPECT_EQ(t.next_change_after(10), 20);
  EXPECT_EQ(t.next_change_after(20), kNever);
}

TEST(Trace, DailyFollowsItsCosineSampled) {
  TraceSpec s;
  s.kind = TraceSpec::Kind::daily;
  s.low = 0.4;
  s.low_at_s = 3600;
  s.period_s = 4 * 3600;
  s.sample_s = 600;
  Trace t(s);
  EXPECT_DOUBLE_EQ(t.value_at(3600), 0.4);             // the low
  EXPECT_DOUBLE_EQ(t.value_at(3600 + 7200), 1.0);      // half a period later: nominal
  EXPECT_DOUBLE_EQ(t.value_at(3600 + 599), 0.4);       // held for a sample
  EXPECT_EQ(t.next_change_after(3600), 4200);
  const double mid = 1 - 0.6 * 0.5 * (1 + std::cos(2 * M_PI * 1800 / s.period_s));
  EXPECT_DOUBLE_EQ(t.value_at(3600 + 1800), mid);
}

TEST(Trace, RandomWalkIsSeededAndBounded) {
  TraceSpec s;
  s.kind = TraceSpec::Kind::random_walk;
  s.seed = 7;
  s.every_s = 60;
  s.sigma = 0.2;
  s.min = 0.3;
  s.max = 1.5;
  Trace a(s), b(s);
  s.seed = 8;
  Trace c(s);
  bool differs = false, moved = false;
  for (double t = 0; t < 6e4; t += 60) {
    const double v = a.value_at(t);
    EXPECT_EQ(v, b.value_at(t));
    EXPECT_GE(v, 0.3);
    EXPECT_LE(v, 1.5);
    differs = differs || v != c.value_at(t);
    moved = moved || v != 1;
  }
  EXPECT_TRUE(differs);
  EXPECT_TRUE(moved);
}

TEST(Trace, OutagesAlternateWithTheirMeanDurations) {
  TraceSpec s;
  s.kind = TraceSpec::Kind::outages;
  s.seed = 3;
  s.mean_up_s = 3600;
  s.mean_down_s = 600;
  Trace t(s);
  double up = 0, down = 0, at = 0;
  int cycles = 0;
  EXPECT_EQ(t.value_at(0), 1);
  while (cycles < 20000) {
    const double next = t.next_change_after(at);
    (t.value_at(at) == 1 ? up : down) += next - at;
    if (t.value_at(at) == 0) ++cycles;
    at = next;
  }
  // 20,000 draws of each: the sample means within 3 % of the means (seeded: exact each run).
  EXPECT_NEAR(up / cycles, 3600, 0.03 * 3600);
  EXPECT_NEAR(down / cycles, 600, 0.03 * 600);
}

TEST(ReplayDynamics, ConstantTracesGiveTheConstantNetworksTimes) {
  const StepGraph g = busy_graph();
  NetworkSpec constant = testing::star(3, link(B, L));
  NetworkSpec traced = constant;
  traced.dynamics = {dynamic(DynamicQuantity::bandwidth, steps({{0, 1}})),
                     dynamic(DynamicQuantity::speed, steps({{0, 1}, {1e-3, 1}})),
                     dynamic(DynamicQuantity::state, steps({{0, 1}}), node(2))};
  ReplayOptions options;
  options.task_times = true;
  const ReplayResult a = replay(constant, g, options);
  options.start_seconds = 1234.5;
  const ReplayResult b = replay(traced, g, options);
  EXPECT_GT(a.step_seconds, 0.02);
  EXPECT_NEAR(b.step_seconds, a.step_seconds, 1e-9);
  for (size_t i = 0; i < a.task_finish_seconds.size(); ++i)
    EXPECT_NEAR(b.task_finish_seconds[i], a.task_finish_seconds[i], 1e-9) << "task " << i;
}

TEST(ReplayDynamics, TransferAcrossABandwidthStep) {
  // Bytes move from 2L at B; at T the rate halves: finish = T + (S − B(T − 2L)) / (B/2).
  StepGraph g(2);
  g.add_transfer(0, 1, S, {}, "kv");
  NetworkSpec net = testing::star(2, link(B, L));
  const double T = 0.006;
  net.dynamics = {dynamic(DynamicQuantity::bandwidth, steps({{T, 0.5}}))};
  const double expected = T + (S - B * (T - 2 * L)) / (B / 2);
  EXPECT_NEAR(replay(net, g).step_seconds, expected, 1e-9);
  // Read on the run's clock: started 1 s before the step, the step sees it 1 s earlier.
  net.dynamics = {dynamic(DynamicQuantity::bandwidth, steps({{1 + T, 0.5}}))};
  ReplayOptions options;
  options.start_seconds = 1;
  EXPECT_NEAR(replay(net, g, options).step_seconds, expected, 1e-9);
}

TEST(ReplayDynamics, LinkDownForDDelaysATransferByD) {
  StepGraph g(2);
  g.add_transfer(0, 1, S, {}, "kv");
  NetworkSpec net = testing::star(2, link(B, L));
  const double D = 0.25;
  net.dynamics = {dynamic(DynamicQuantity::state, steps({{0.005, 0}, {0.005 + D, 1}}), node(1))};
  // The receiver's access link goes down mid-transfer: the bytes wait D.
  NetworkSpec links_only = net;
  links_only.dynamics[0].target = DynamicTarget{};  // every link
  EXPECT_NEAR(replay(links_only, g).step_seconds, 2 * L + S / B + D, 1e-9);
  // The node itself down: the same wait.
  EXPECT_NEAR(replay(net, g).step_seconds, 2 * L + S / B + D, 1e-9);
  // Down before the transfer is due and up after: its bytes start at the up date.
  net.dynamics[0].trace = steps({{0, 0}, {D, 1}});
  EXPECT_NEAR(replay(net, g).step_seconds, D + S / B, 1e-9);
}

// 0 -> 1 and 2 -> 1 (S each) sharing node 1's downlink, node 2 down from t1 for
// `down` seconds: each transfer's finish.
ReplayResult two_flows_one_down(double t1, double down) {
  StepGraph g(3);
  g.add_transfer(0, 1, S, {}, "kv");
  g.add_transfer(2, 1, S, {}, "kv");
  NetworkSpec net = testing::star(3, link(B, L));
  net.dynamics = {dynamic(DynamicQuantity::state, steps({{t1, 0}, {t1 + down, 1}}), node(2))};
  ReplayOptions options;
  options.task_times = true;
  return replay(net, g, options);
}

TEST(ReplayDynamics, AStoppedTransferLeavesItsShareToTheOthers) {
  // Both at B/2 from 2L; node 2 down from t1 to t1 + D: 0 -> 1 alone at B, then
  // 2 -> 1 alone at B with what it had left.
  const double t1 = 0.004, D = 0.1;
  const double moved = (t1 - 2 * L) * B / 2;  // by each flow before t1
  const ReplayResult r = two_flows_one_down(t1, D);
  EXPECT_NEAR(r.task_finish_seconds[0], t1 + (S - moved) / B, 1e-9);
  EXPECT_NEAR(r.task_finish_seconds[1], t1 + D + (S - moved) / B, 1e-9);
}

TEST(ReplayDynamics, AResumedTransferSharesAsBefore) {
  // As above with a short outage, d: 0 -> 1 alone at B during it, then both at B/2
  // again until 0 -> 1 ends, then 2 -> 1 alone at B.
  const double t1 = 0.004, d = 0.001;
  const double moved = (t1 - 2 * L) * B / 2;                // by each flow before t1
  const double first_left = S - moved - d * B;               // 0 -> 1 after the outage
  const double first_end = t1 + d + first_left / (B / 2);    // both at B/2 meanwhile
  const double second_left = S - moved - first_left;         // 2 -> 1 at first_end
  const ReplayResult r = two_flows_one_down(t1, d);
  EXPECT_NEAR(r.task_finish_seconds[0], first_end, 1e-9);
  EXPECT_NEAR(r.task_finish_seconds[1], first_end + second_left / B, 1e-9);
}

TEST(ReplayDynamics, SlowerOrDownNodeStretchesItsComputeExactly) {
  StepGraph g(2);
  g.add_compute(0, 1.0, {}, "mlp");
  g.add_compute(1, 1.0, {}, "mlp");
  NetworkSpec net = testing::star(2, link(B, L));
  net.dynamics = {dynamic(DynamicQuantity::speed, steps({{0.4, 0.5}}), node(0))};
  ReplayResult r = replay(net, g);
  EXPECT_NEAR(r.rank_finish_seconds[0], 0.4 + 0.6 / 0.5, 1e-9);
  EXPECT_NEAR(r.rank_finish_seconds[1], 1.0, 1e-9);
  net.dynamics = {dynamic(DynamicQuantity::state, steps({{0.3, 0}, {0.8, 1}}), node(1))};
  r = replay(net, g);
  EXPECT_NEAR(r.rank_finish_seconds[1], 1.5, 1e-9);
  EXPECT_NEAR(r.rank_finish_seconds[0], 1.0, 1e-9);
}

TEST(ReplayDynamics, SharedComputePausesAndGoesOnTogether) {
  // A (1 s) and B (2 s) share rank 0 from 0; the node is down from 0.5 to 1.5:
  // each has done 0.25 s, then both at half speed until A ends at 1.5 + 2·0.75,
  // then B alone with 1.75 − 0.75 left.
  StepGraph g(2);
  g.add_compute(0, 1.0, {}, "a");
  g.add_compute(0, 2.0, {}, "b");
  NetworkSpec net = testing::star(2, link(B, L));
  net.dynamics = {dynamic(DynamicQuantity::state, steps({{0.5, 0}, {1.5, 1}}), node(0))};
  ReplayOptions options;
  options.task_times = true;
  const ReplayResult r = replay(net, g, options);
  EXPECT_NEAR(r.task_finish_seconds[0], 3.0, 1e-9);
  EXPECT_NEAR(r.task_finish_seconds[1], 4.0, 1e-9);
}

TEST(ReplayDynamics, LatencyIsTheRoutesWhenATransferStarts) {
  StepGraph g(2);
  const TaskId c = g.add_compute(0, 0.010, {}, "mlp");
  g.add_transfer(0, 1, S, {c}, "kv");
  NetworkSpec net = testing::star(2, link(B, L));
  net.dynamics = {dynamic(DynamicQuantity::latency, steps({{0.005, 3}}))};
  EXPECT_NEAR(replay(net, g).step_seconds, 0.010 + 2 * 3 * L + S / B, 1e-9);
}

TEST(ReplayDynamics, BatchedGraphsRunBackToBackOnTheRunsClock) {
  StepGraph g(2);
  g.add_transfer(0, 1, S, {}, "kv");  // 12 ms alone
  NetworkSpec net = testing::star(2, link(B, L));
  const double step = 2 * L + S / B;
  // Bandwidth halves between the first graph's end and the second's: only the second slows.
  net.dynamics = {dynamic(DynamicQuantity::bandwidth, steps({{step + 0.0005, 0.5}}))};
  const std::vector<ReplayResult> r = replay_batch(net, {g, g});
  EXPECT_NEAR(r[0].step_seconds, step, 1e-9);
  EXPECT_NEAR(r[1].step_seconds, 2 * L + 2 * S / B, 1e-9);
  // The same second step replayed alone, started at the date it started in the batch.
  ReplayOptions options;
  options.start_seconds = step;
  EXPECT_NEAR(replay(net, g, options).step_seconds, r[1].step_seconds, 1e-9);
}

TEST(ReplayDynamics, SameSeedSameTimesOtherSeedOtherTimes) {
  const StepGraph g = busy_graph();
  NetworkSpec net = testing::star(3, link(B, L));
  TraceSpec dips;
  dips.kind = TraceSpec::Kind::outages;
  dips.seed = 11;
  dips.mean_up_s = 0.01;
  dips.mean_down_s = 0.005;
  dips.value = 0.25;
  net.dynamics = {dynamic(DynamicQuantity::bandwidth, dips)};
  const std::vector<StepGraph> graphs(20, g);
  const std::vector<ReplayResult> a = replay_batch(net, graphs), b = replay_batch(net, graphs);
  net.dynamics[0].trace.seed = 12;
  const std::vector<ReplayResult> c = replay_batch(net, graphs);
  bool differs = false;
  for (size_t i = 0; i < graphs.size(); ++i) {
    EXPECT_EQ(a[i].step_seconds, b[i].step_seconds) << i;
    differs = differs || a[i].step_seconds != c[i].step_seconds;
  }
  EXPECT_TRUE(differs);
}

TEST(ReplayDynamics, BandwidthBoundStepsUnderADailyTraceMoveTheirWork) {
  // Steps that only move S bytes (latency 1 ns) on a link whose bandwidth follows
  // a sampled daily cosine: the run ends when the bytes moved, ∫ B·f(t) dt, reach
  // N·S, which the trace's samples give exactly.
  StepGraph g(2);
  g.add_transfer(0, 1, S, {}, "kv");
  NetworkSpec net = testing::full_mesh(2, link(B, 1e-9));
  TraceSpec daily;
  daily.kind = TraceSpec::Kind::daily;
  daily.low = 0.3;
  daily.low_at_s = 30;
  daily.period_s = 100;
  daily.sample_s = 1;
  net.dynamics = {dynamic(DynamicQuantity::bandwidth, daily)};
  const int steps = 3000;  // 30 s nominal, about 62 s on the trace
  const std::vector<ReplayResult> r = replay_batch(net, std::vector<StepGraph>(steps, g));
  double total = 0;
  for (const ReplayResult& x : r) total += x.step_seconds;
  Trace f(daily);
  double t = 0, bytes_left = steps * S;
  while (bytes_left > B * f.value_at(t) * (f.next_change_after(t) - t)) {
    bytes_left -= B * f.value_at(t) * (f.next_change_after(t) - t);
    t = f.next_change_after(t);
  }
  const double expected = t + bytes_left / (B * f.value_at(t)) + steps * 1e-9;
  EXPECT_GT(expected, 40.0);
  EXPECT_NEAR(total, expected, 1e-7 * expected);  // SimGrid ends a flow within its precision
}

TEST(ReplayDynamics, ALinkThatNeverComesBackIsAnInputError) {
  StepGraph g(2);
  g.add_transfer(0, 1, S, {}, "kv");
  NetworkSpec net = testing::star(2, link(B, L));
  net.dynamics = {dynamic(DynamicQuantity::state, steps({{0.001, 0}}), node(1))};
  try {
    replay(net, g);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "network.dynamics");
  }
}

}  // namespace
}  // namespace lowband::sim
