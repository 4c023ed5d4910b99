// How long planning a sweep takes (`lowband sweep --dry-run`): parsing, resolving
// and grouping N points of the built-in default scenario, one training each (a
// seed axis). Target: 20,000 points under 2 s; planning should grow linearly.
//   build/bench_sweep_plan --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <string>

#include "runtime/scenario/load.h"
#include "runtime/scenario/grid.h"

namespace {

using namespace lowband;

void BM_PlanSeeds(benchmark::State& state) {
  const int points = int(state.range(0));
  std::string seeds = "training.seed=";
  for (int i = 1; i <= points; ++i) seeds += (i > 1 ? "," : "") + std::to_string(i);
  const std::string text = builtin_scenario_text("default");
  size_t groups = 0;
  for (auto _ : state) {
    const grid::SweepPlan plan = grid::plan_sweep(grid::make_spec(text, "bench.json", {seeds}));
    groups = plan.groups.size();
    benchmark::DoNotOptimize(groups);
  }
  state.counters["points"] = points;
  state.counters["trainings"] = double(groups);
}
BENCHMARK(BM_PlanSeeds)->Arg(2000)->Arg(20000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
