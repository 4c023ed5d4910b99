// Replay under `ideal` waits each transfer's route latency on its own timer and
// starts the SimGrid Comm afterwards (sim/deferred_latency.h). Any network.simgrid
// setting turns that off, so the same graph on the same network, with and without
// a no-op setting, must replay to the same task times (up to SimGrid's 1 ns event
// merging): here with flows of different route latencies sharing links, where the
// Comm's sharing penalty (its route latency) decides the shares.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "networks.h"
#include "sim/collectives.h"
#include "sim/replay.h"

namespace lowband::sim {
namespace {

using testing::link;

NetworkSpec uneven_star() {
  NetworkSpec n = testing::star(6, link(1e8, 1e-3));
  n.node_links = {NodeLink{1, link(1e8, 7e-3)}, NodeLink{3, link(5e7, 2e-4)}, NodeLink{5, link(2e8, 0)}};
  return n;
}

StepGraph mixed_graph() {
  StepGraph g(6);
  const TaskId c0 = g.add_compute(0, 0.004, {}, "mlp");
  const TaskId c3 = g.add_compute(3, 0.010, {}, "mlp");
  // Incast into 0 from nodes of different latencies, overlapping a ring and a direct fan-out.
  std::vector<TaskId> into0;
  for (int src : {1, 2, 3, 5}) into0.push_back(g.add_transfer(src, 0, 3e6 + 1e5 * src, {}, "kv"));
  const TaskId t = g.add_transfer(0, 4, 2e6, {c0}, "kv");
  g.add_transfer(4, 1, 0, {t}, "kv");  // empty: costs its latency only
  into0.push_back(c0);
  g.add_compute(0, 0.002, into0, "attention");
  std::vector<int> ring{5, 4, 3, 2, 1, 0};
  RankDeps after(6);
  after[2] = {c3};
  ring_all_reduce(g, ring, 6e6, after, "grad_sync");
  for (int dst = 1; dst < 6; ++dst) g.add_transfer(3, dst, 1e6, {c3}, "grad_sync");
  return g;
}

TEST(DeferredLatency, SameTimesAsLatencyInsideSimGrid) {
  const StepGraph g = mixed_graph();
  NetworkSpec inside = uneven_star();
  inside.simgrid_config = {{"network/crosstraffic", "0"}};  // what ideal sets anyway
  for (const NetworkSpec& deferred : {uneven_star(), testing::full_mesh(6, link(1e8, 3e-3))}) {
    NetworkSpec plain = deferred;
    plain.simgrid_config = inside.simgrid_config;
    const ReplayResult a = replay(deferred, g, ReplayOptions{true});
    const ReplayResult b = replay(plain, g, ReplayOptions{true});
    ASSERT_EQ(a.task_finish_seconds.size(), b.task_finish_seconds.size());
    for (size_t i = 0; i < a.task_finish_seconds.size(); ++i)
      EXPECT_NEAR(a.task_finish_seconds[i], b.task_finish_seconds[i], 1e-9 * std::max(1.0, b.step_seconds)) << i;
    EXPECT_NEAR(a.step_seconds, b.step_seconds, 1e-12 * b.step_seconds);
  }
}

}  // namespace
}  // namespace lowband::sim
