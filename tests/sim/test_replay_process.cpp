// The replay's own process (sim/replay_process.h, sim/replay_main.cpp): what it
// is sent arrives whole (every field of the network, every task of the graphs);
// replays started while other threads of the caller allocate and run OpenMP
// regions end, many times over, with the same figures (a fork of the caller
// could inherit a lock such a thread held and wait for ever); and a missing
// replay program is an error that says where it looked.
#include <gtest/gtest.h>
#include <omp.h>
#include <stdlib.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "networks.h"
#include "sim/replay.h"
#include "sim/replay_wire.h"

namespace lowband::sim {
namespace {

using testing::link;

// A network with every field away from its default.
NetworkSpec every_field() {
  NetworkSpec n = testing::star(6, link(1e8, 1e-3));
  n.model = NetworkModel::tcp;
  n.topology = Topology::clusters;
  n.link.upload_bytes_per_s = 5e7;
  n.node_links = {{2, link(3e7, 2e-3)}};
  n.pair_links = {{0, 1, link(4e7, 3e-3)}};
  n.clusters = {{3, link(1e9, 1e-4)}, {3, link(2e9, 2e-4)}};
  n.wan = link(1e7, 0.05);
  n.wan_links = {{0, 1, link(2e7, 0.04)}};
  n.tcp.send_buffer_bytes = 1 << 20;
  n.tcp.congestion_control = CongestionControl::bbr;
  n.tcp.connections = ConnectionState::idle;
  n.message_order = MessageOrder::fifo;
  n.simgrid_config = {{"network/maxmin-selective-update", "yes"}};
  TraceSpec steps;
  steps.points = {{10, 0.5}, {20, 1}};
  TraceSpec walk;
  walk.kind = TraceSpec::Kind::random_walk;
  walk.sigma = 0.1, walk.min = 0.5, walk.max = 2, walk.seed = 7;
  n.dynamics = {{{DynamicTarget::Kind::node, 1, -1}, DynamicQuantity::bandwidth, steps},
                {{DynamicTarget::Kind::between, 0, 1}, DynamicQuantity::latency, walk}};
  n.restart = RestartPolicy{60, 5};
  return n;
}

StepGraph small_graph() {
  StepGraph g(4);
  const TaskId a = g.add_compute(0, 0.01, {}, "fwd");
  const TaskId t = g.add_transfer(0, 1, 1e6, {a}, "kv");
  g.add_transfer(1, 2, 5e5, {t}, "kv");
  g.add_compute(3, 0.02, {}, "optimizer");
  return g;
}

TEST(ReplayWire, ARequestReadBackWritesTheSameBytes) {
  const NetworkSpec n = every_field();
  const StepGraph g = small_graph();
  ReplayOptions options;
  options.task_times = true, options.start_seconds = 12.5;
  std::ostringstream first;
  wire::write_request(first, n, {&g, &g}, options);
  std::istringstream in(first.str());
  const wire::Request r = wire::read_request(in);
  ASSERT_EQ(r.graphs.size(), 2u);
  std::vector<const StepGraph*> graphs{&r.graphs[0], &r.graphs[1]};
  std::ostringstream second;
  wire::write_request(second, r.network, graphs, r.options);
  EXPECT_EQ(first.str(), second.str());
  // Spot checks that the fields are the ones written, not only written alike.
  EXPECT_EQ(r.network.topology, Topology::clusters);
  EXPECT_EQ(r.network.dynamics.at(1).trace.seed, 7u);
  EXPECT_EQ(r.network.restart->relaunch_seconds, 5);
  EXPECT_EQ(r.options.start_seconds, 12.5);
  ASSERT_EQ(r.graphs[0].size(), g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    const Task a = g.task(TaskId(i)), b = r.graphs[0].task(TaskId(i));
    EXPECT_TRUE(a.kind == b.kind && a.rank == b.rank && a.peer == b.peer && a.bytes == b.bytes &&
                a.seconds == b.seconds && a.kind_tag == b.kind_tag && a.deps == b.deps);
  }
}

TEST(ReplayWire, DamagedRequestsAreRefused) {
  const StepGraph g = small_graph();
  std::ostringstream out;
  wire::write_request(out, every_field(), {&g}, {});
  const std::string bytes = out.str();
  for (size_t cut : {size_t(0), size_t(8), bytes.size() / 2, bytes.size() - 1}) {
    std::istringstream in(bytes.substr(0, cut));
    EXPECT_ANY_THROW(wire::read_request(in)) << "cut at " << cut;
  }
  std::string other = bytes;
  other[0] ^= 1;  // another magic
  std::istringstream in(other);
  EXPECT_ANY_THROW(wire::read_request(in));
}

TEST(ReplayProcess, ReplaysWhileOtherThreadsAllocateEndAlike) {
  const NetworkSpec n = testing::star(4, link(1e8, 1e-3));
  const StepGraph g = small_graph();
  const double expected = replay(n, g).step_seconds;
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (int t = 0; t < 4; ++t)
    busy.emplace_back([&stop, t] {
      while (!stop) {
        if (t % 2 == 0) {  // the allocator's locks, taken and given back all the time
          std::vector<std::unique_ptr<int[]>> blocks;
          for (int i = 0; i < 64; ++i) blocks.emplace_back(new int[size_t(1 + i * 37 % 4096)]);
        } else {  // an OpenMP pool of its own, as a rank thread's
          double sum = 0;
#pragma omp parallel for reduction(+ : sum) num_threads(2)
          for (int i = 0; i < 20000; ++i) sum += i * 1e-9;
          if (sum < 0) stop = true;
        }
      }
    });
  for (int i = 0; i < 40; ++i) ASSERT_EQ(replay(n, g).step_seconds, expected) << "replay " << i;
  stop = true;
  for (std::thread& t : busy) t.join();
}

// In a child process of its own: this one's replay process is started already
// (it is kept for the process's life), and a fork starts its own.
TEST(ReplayProcess, AMissingReplayProgramSaysWhere) {
  EXPECT_EXIT(
      {
        ::setenv("LOWBAND_REPLAY", "/nonexistent/lowband-replay", 1);
        try {
          replay(testing::star(2, link(1e8, 1e-3)), StepGraph(2));
        } catch (const std::runtime_error& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::_Exit(std::string(e.what()).find("/nonexistent/lowband-replay") != std::string::npos ? 0 : 1);
        }
        std::_Exit(2);
      },
      ::testing::ExitedWithCode(0), "cannot start /nonexistent/lowband-replay");
}

}  // namespace
}  // namespace lowband::sim
