// Where `lowband estimate` of a scenario spends its time and memory, phase by
// phase: its trainer built dry, one dry step of every rank (their logs), the
// assembly of the step graph from the logs, and the replay on SimGrid; with the sizes of
// each (tasks, transfers, dependencies) and the peak RSS after each.
//   build/bench_estimate_phases SCENARIO [KEY=VALUE]... [--no-replay]
//   build/bench_estimate_phases scenarios/mos-paper-mos-300mbps.json
//       parallel.context=512 network.nodes=512
// A plain program, not a Google Benchmark: one run of each phase is the figure
// (scripts/experiments/estimate-scaling.sh takes the medians end to end).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/parallel/dry_steps.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/load.h"
#include "sim/replay.h"

namespace {

using namespace lowband;

double peak_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

struct Clock {
  std::chrono::steady_clock::time_point t = std::chrono::steady_clock::now();
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - t).count();
    t = now;
    return s;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SCENARIO [KEY=VALUE]...\n", argv[0]);
    return 2;
  }
  std::vector<std::string> sets(argv + 2, argv + argc);
  // --no-replay: the dry run and the assembly only.
  const bool no_replay = std::find(sets.begin(), sets.end(), "--no-replay") != sets.end();
  sets.erase(std::remove(sets.begin(), sets.end(), "--no-replay"), sets.end());
  const Scenario s = load_scenario_file(argv[1], sets);
  Clock clock;

  // The trainer run dry (parallel/dry_steps.h): its ranks in turn, then the
  // assembly of their logs, which the step's record times.
  parallel::LayoutTrainer trainer(s, parallel::LayoutTrainer::Dry{});
  const double built = clock.lap();
  std::printf("trainer     %8.3f s  %d ranks  peak %.0f MB\n", built, trainer.ranks(), peak_mb());
  const std::vector<int32_t> tokens(size_t(s.training.batch_size) * size_t(s.model.seq_len), 0);
  parallel::StepRecord rec =
      trainer.train_step(parallel::steady_step(s, true), tokens.data(), tokens.data(), s.training.batch_size);
  const double step = clock.lap();
  sim::StepGraph graph = std::move(rec.graph);
  std::printf("dry step    %8.3f s  peak %.0f MB\n", step - rec.record_wall_seconds, peak_mb());
  const double assemble = rec.record_wall_seconds;
  size_t transfers = 0, deps = 0;
  for (size_t i = 0; i < graph.size(); ++i) {
    transfers += graph.records()[i].kind == sim::TaskKind::transfer;
    deps += graph.deps(sim::TaskId(i)).size();
  }
  std::printf("assembly    %8.3f s  %zu tasks, %zu transfers, %zu dependencies  peak %.0f MB\n", assemble,
              graph.size(), transfers, deps, peak_mb());
  // Per kind tag: compute tasks, transfers (to another rank), their bytes.
  std::vector<size_t> n_compute(graph.tag_names().size()), n_transfer(n_compute.size());
  std::vector<double> bytes(n_compute.size());
  size_t empty = 0;  // transfers SimGrid is handed as 0 bytes (llround)
  for (const sim::StepGraph::Record& t : graph.records()) {
    if (t.kind == sim::TaskKind::compute) ++n_compute[t.tag];
    else if (t.rank != t.peer) ++n_transfer[t.tag], bytes[t.tag] += t.amount, empty += t.amount < 0.5;
  }
  std::printf("  %zu transfers of under half a byte\n", empty);
  for (size_t k = 0; k < n_compute.size(); ++k)
    std::printf("  %-16s %9zu compute  %9zu transfers  %.4g bytes\n", graph.tag_names()[k].c_str(), n_compute[k],
                n_transfer[k], bytes[k]);
  if (no_replay) return 0;
  clock.lap();

  const sim::ReplayResult r = sim::replay(s.network, graph);
  const double replay = clock.lap();
  std::printf("replay      %8.3f s  step %.12g s  peak %.0f MB (this process)\n", replay, r.step_seconds,
              peak_mb());
  rusage child{};
  getrusage(RUSAGE_CHILDREN, &child);
  std::printf("replay child peak %.0f MB\n", double(child.ru_maxrss) / 1024.0);
  return 0;
}
