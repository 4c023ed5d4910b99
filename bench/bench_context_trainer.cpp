// One training step of the built-in quickstart model (4 layers, d_model 256,
// seq 1024, byte vocabulary) on 2 OpenMP threads: the single-device model
// (Model + LocalAttention + AdamW) against context parallelism over P in-process
// ranks (LayoutTrainer), with and without recording the step graph, and the
// SimGrid replay of one recorded graph on the quickstart network. The ratio of
// (record + replay) to the step is the harness overhead.
//   ./bench_context_trainer --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <omp.h>

#include <vector>

#include "bench/benchmark_main.h"
#include "runtime/compress/make_codec.h"
#include "runtime/model/model.h"
#include "runtime/optim/optimizer.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/load.h"
#include "sim/replay.h"

namespace {

using namespace lowband;

Scenario quickstart(int P) {
  return builtin_scenario("default", {"parallel.context=" + std::to_string(P)});
}

std::vector<int32_t> tokens(const Scenario& s, int shift) {
  std::vector<int32_t> t(size_t(s.model.seq_len * s.training.batch_size));
  for (size_t i = 0; i < t.size(); ++i) t[i] = int32_t((i * 131 + 7 + size_t(shift)) % 256);
  return t;
}

void BM_single_device_step(benchmark::State& state) {
  omp_set_num_threads(2);
  const Scenario s = quickstart(1);
  model::Model m(s.model, s.training.seed);
  model::LocalAttention attention;
  optim::AdamW opt(m.layout(), optim::optimizer_config_from(s.training));
  const auto in = tokens(s, 0), tg = tokens(s, 1);
  model::TokenBatch b;
  b.inputs = in.data(), b.targets = tg.data(), b.sequences = s.training.batch_size, b.tokens = s.model.seq_len;
  for (auto _ : state) {
    benchmark::DoNotOptimize(m.forward_backward(b, attention));
    opt.step(m.params(), m.grads(), 1e-4);
  }
  state.counters["tokens_per_s"] =
      benchmark::Counter(double(s.model.seq_len * s.training.batch_size), benchmark::Counter::kIsIterationInvariantRate);
}

// Arg 0: ranks P; arg 1: record the step graph (1) or not (0).
void BM_context_trainer_step(benchmark::State& state) {
  omp_set_num_threads(2);
  const Scenario s = quickstart(int(state.range(0)));
  parallel::LayoutTrainer cp(s);
  const auto in = tokens(s, 0), tg = tokens(s, 1);
  int step = 0;
  double record_seconds = 0;
  for (auto _ : state) {
    const parallel::StepRecord rec = cp.train_step(step++, in.data(), tg.data(), s.training.batch_size, state.range(1) != 0);
    record_seconds += rec.record_wall_seconds;
  }
  state.counters["record_seconds"] = benchmark::Counter(record_seconds, benchmark::Counter::kAvgIterations);
  state.counters["tokens_per_s"] =
      benchmark::Counter(double(s.model.seq_len * s.training.batch_size), benchmark::Counter::kIsIterationInvariantRate);
}

// The replay of one recorded quickstart step (a forked SimGrid child per call).
void BM_replay_recorded_step(benchmark::State& state) {
  const Scenario s = quickstart(4);
  parallel::LayoutTrainer cp(s);
  const auto in = tokens(s, 0), tg = tokens(s, 1);
  const sim::StepGraph graph = cp.train_step(0, in.data(), tg.data(), s.training.batch_size).graph;
  for (auto _ : state) benchmark::DoNotOptimize(sim::replay(s.network, graph).step_seconds);
}

// Twenty recorded steps replayed in one child (what `lowband run` does).
void BM_replay_batch_of_20(benchmark::State& state) {
  const Scenario s = quickstart(4);
  parallel::LayoutTrainer cp(s);
  const auto in = tokens(s, 0), tg = tokens(s, 1);
  const std::vector<sim::StepGraph> graphs(20, cp.train_step(0, in.data(), tg.data(), s.training.batch_size).graph);
  for (auto _ : state) benchmark::DoNotOptimize(sim::replay_batch(s.network, graphs).size());
}

}  // namespace

BENCHMARK(BM_single_device_step)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_context_trainer_step)->Args({1, 0})->Args({4, 0})->Args({4, 1})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_replay_recorded_step)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_replay_batch_of_20)->Unit(benchmark::kMillisecond)->UseRealTime();
LOWBAND_BENCHMARK_MAIN()
