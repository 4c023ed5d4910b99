// How long `lowband estimate` takes: the paper's three scenarios end to end
// (build the graph, replay it on SimGrid), and the replay alone of a 512-rank
// context-parallel step graph. Targets: under 1 s and under 10 s. Times are wall
// times (UseRealTime): SimGrid runs in a forked child process.
//   build-*/bench_estimate --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <string>

#include "runtime/estimate/estimate.h"
#include "runtime/parallel/dry_steps.h"
#include "runtime/scenario/load.h"
#include "sim/replay.h"

namespace {

using namespace lowband;

void BM_EstimatePaperScenario(benchmark::State& state, const std::string& file) {
  const Scenario s = load_scenario_file(std::string(LOWBAND_SOURCE_DIR) + "/scenarios/" + file);
  double tokens_per_s = 0;
  for (auto _ : state) {
    Estimate e = estimate(s);
    benchmark::DoNotOptimize(e);  // (DoNotOptimize on a double read later gave garbage here)
    tokens_per_s = e.tokens_per_s;
  }
  state.counters["tokens_per_s"] = tokens_per_s;
}
// Real time: the replay runs in a forked child, which CPU time would not count.
BENCHMARK_CAPTURE(BM_EstimatePaperScenario, centralized, std::string("mos-paper-centralized-100gbps.json"))
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_EstimatePaperScenario, decentralized, std::string("mos-paper-decentralized-300mbps.json"))
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_EstimatePaperScenario, mos, std::string("mos-paper-mos-300mbps.json"))
    ->Unit(benchmark::kMillisecond)->UseRealTime();

// The paper's centralized scenario (A100-80GB, bf16, zigzag ring, per-layer ring
// all-reduce of the gradients) cut to 2 layers and spread over 512 ranks (128
// tokens per chunk) on a 512-node star at 10 Gbps / 10 us.
Scenario cp512_scenario() {
  return builtin_scenario("mos-paper-centralized-100gbps",
                          {"name=cp512", "model.layers=2", "parallel.context=512", "network.nodes=512",
                           "network.bandwidth=10Gbps", "network.latency=10us"});
}

// Argument: 1 with the per-layer gradient all-reduce (4 buckets of 2·511·512
// transfers: half the graph's 4.2M tasks), 0 without (a step between sparse syncs).
void BM_Replay512RankContextParallelStep(benchmark::State& state) {
  Scenario s = cp512_scenario();
  if (state.range(0) == 0) s.compression.weight_sync = WeightSync::sparse, s.compression.sync_every = 2;
  const sim::StepGraph graph = parallel::steady_step_graph(s, state.range(0) != 0);
  double step_seconds = 0;
  for (auto _ : state) {
    sim::ReplayResult r = sim::replay(s.network, graph);
    benchmark::DoNotOptimize(r);
    step_seconds = r.step_seconds;
  }
  state.counters["tasks"] = static_cast<double>(graph.tasks().size());
  state.counters["simulated_step_s"] = step_seconds;
}
BENCHMARK(BM_Replay512RankContextParallelStep)
    ->ArgName("weight_sync")->Arg(0)->Arg(1)
    ->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

void BM_Build512RankContextParallelStep(benchmark::State& state) {
  const Scenario s = cp512_scenario();
  size_t tasks = 0;
  for (auto _ : state) {
    sim::StepGraph graph = parallel::steady_step_graph(s);
    benchmark::DoNotOptimize(graph);
    tasks = graph.tasks().size();
  }
  state.counters["tasks"] = static_cast<double>(tasks);
}
BENCHMARK(BM_Build512RankContextParallelStep)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
