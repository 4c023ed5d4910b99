// Replay speed of sim::replay on synthetic context-parallel step graphs.
//
// Per layer and rank: a Q/K/V projection, then P-1 ring rounds in which the rank
// sends the K/V block it holds to its successor while it runs attention on that
// block (transfer and compute overlap), then an MLP; after the last layer a ring
// all-reduce of the weight gradients. Transfers: layers*P(P-1) + 2P(P-1).
// Network: a star of P nodes, 300 Mbps / 1 ms access links, model ideal.
// Counters: transfers, and transfers per second of wall time (median over repetitions).
#include <benchmark/benchmark.h>

#include <vector>

#include "sim/collectives.h"
#include "sim/replay.h"

namespace {

using namespace lowband::sim;

struct CpGraph {
  StepGraph graph;
  double transfers = 0;
};

CpGraph context_parallel_graph(int P, int layers) {
  const double kv_block_bytes = 1e6, attention_block_s = 0.020, projection_s = 0.005, mlp_s = 0.030;
  const double gradient_bytes = 1.6e9;  // 800M parameters in bf16
  CpGraph out{StepGraph(P), 0};
  StepGraph& g = out.graph;
  std::vector<TaskId> done(static_cast<size_t>(P), -1);
  for (int layer = 0; layer < layers; ++layer) {
    std::vector<TaskId> held(static_cast<size_t>(P)), sent(static_cast<size_t>(P)), attention(static_cast<size_t>(P));
    for (int i = 0; i < P; ++i) {
      std::vector<TaskId> after;
      if (done[static_cast<size_t>(i)] >= 0) after.push_back(done[static_cast<size_t>(i)]);
      held[static_cast<size_t>(i)] = g.add_compute(i, projection_s, after, "qkv");
      sent[static_cast<size_t>(i)] = held[static_cast<size_t>(i)];
      attention[static_cast<size_t>(i)] = g.add_compute(i, attention_block_s, {held[static_cast<size_t>(i)]}, "attention");
    }
    for (int round = 0; round + 1 < P; ++round) {
      std::vector<TaskId> received(static_cast<size_t>(P));
      for (int i = 0; i < P; ++i) {
        const int next = (i + 1) % P;
        const TaskId t = g.add_transfer(i, next, kv_block_bytes,
                                        {held[static_cast<size_t>(i)], sent[static_cast<size_t>(i)]}, "kv");
        sent[static_cast<size_t>(i)] = t;
        received[static_cast<size_t>(next)] = t;
        out.transfers += 1;
      }
      for (int i = 0; i < P; ++i) {
        held[static_cast<size_t>(i)] = received[static_cast<size_t>(i)];
        attention[static_cast<size_t>(i)] = g.add_compute(
            i, attention_block_s, {received[static_cast<size_t>(i)], attention[static_cast<size_t>(i)]}, "attention");
      }
    }
    for (int i = 0; i < P; ++i)
      done[static_cast<size_t>(i)] =
          g.add_compute(i, mlp_s, {attention[static_cast<size_t>(i)], sent[static_cast<size_t>(i)]}, "mlp");
  }
  RankDeps after;
  for (TaskId id : done) after.push_back({id});
  std::vector<int> ranks(static_cast<size_t>(P));
  for (int i = 0; i < P; ++i) ranks[static_cast<size_t>(i)] = i;
  ring_all_reduce(g, ranks, gradient_bytes, after, "grad_sync");
  out.transfers += 2.0 * P * (P - 1);
  return out;
}

NetworkSpec star(int P) {
  NetworkSpec n;
  n.model = NetworkModel::ideal;
  n.topology = Topology::star;
  n.nodes = P;
  n.link = Link{37.5e6, 1e-3};
  return n;
}

void BM_ReplayContextParallel(benchmark::State& state) {
  const int P = static_cast<int>(state.range(0)), layers = static_cast<int>(state.range(1));
  const CpGraph cp = context_parallel_graph(P, layers);
  const NetworkSpec net = star(P);
  double step_s = 0;
  for (auto _ : state) {
    step_s = replay(net, cp.graph).step_seconds;  // forks a child: never optimized away
  }
  state.counters["transfers"] = cp.transfers;
  state.counters["transfers_per_s"] =
      benchmark::Counter(cp.transfers, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["simulated_step_s"] = step_s;
}

BENCHMARK(BM_ReplayContextParallel)
    ->ArgNames({"P", "layers"})
    ->Args({8, 8})
    ->Args({64, 4})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()  // the work happens in a child process
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

BENCHMARK(BM_ReplayContextParallel)
    ->ArgNames({"P", "layers"})
    ->Args({512, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

// A run's replay on a changing network (network.dynamics): every step replayed, in
// batches of 20 (RunOptions::replay_every) back to back on the run's clock, on
// bandwidth with a daily pattern and random dips, and one node's outages. Steps:
// the quickstart's shape (4 ranks, 4 layers). Counter: wall seconds per 10,000
// steps (the target: < 60 s on 2 cores).
void BM_ReplayChangingNetwork(benchmark::State& state) {
  const int steps = static_cast<int>(state.range(0)), batch = 20;
  const CpGraph cp = context_parallel_graph(4, 4);
  NetworkSpec net = star(4);
  TraceSpec daily;
  daily.kind = TraceSpec::Kind::daily;
  daily.low = 0.4;
  TraceSpec dips;
  dips.kind = TraceSpec::Kind::outages;
  dips.seed = 1;
  dips.mean_up_s = 1800;
  dips.mean_down_s = 120;
  dips.value = 0.2;
  TraceSpec outages = dips;
  outages.seed = 2;
  outages.value = 0;
  net.dynamics = {NetworkDynamic{{}, DynamicQuantity::bandwidth, daily},
                  NetworkDynamic{{}, DynamicQuantity::bandwidth, dips},
                  NetworkDynamic{{DynamicTarget::Kind::node, 2, -1}, DynamicQuantity::state, outages}};
  const std::vector<const StepGraph*> graphs(static_cast<size_t>(batch), &cp.graph);
  double clock = 0;
  for (auto _ : state) {
    clock = 0;
    for (int done = 0; done < steps; done += batch) {
      ReplayOptions options;
      options.start_seconds = clock;
      for (const ReplayResult& r : replay_batch(net, graphs, options)) clock += r.step_seconds;
    }
  }
  state.counters["simulated_hours"] = clock / 3600;
  state.counters["wall_s_per_10k_steps"] =
      benchmark::Counter(steps / 1e4, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

BENCHMARK(BM_ReplayChangingNetwork)
    ->ArgNames({"steps"})
    ->Args({1000})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
