#include "runtime/parallel/dry_steps.h"

#include <vector>

#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/layout_check.h"
#include "runtime/sync/sync_period.h"

namespace lowband::parallel {

int steady_step(const Scenario& s, bool sync_step) {
  const int every = sync::sync_period_steps(s);
  const int warmup = s.compression.method == CompressionMethod::none ? 0 : s.compression.warmup_steps;
  const int first = (warmup + every - 1) / every * every;  // the first period that compresses throughout
  return sync_step || every == 1 ? first + every - 1 : first;
}

namespace {

// Steps first..last of the scenario's trainer run dry: the last one's graph.
sim::StepGraph dry_steps_graph(const Scenario& s, int first, int last) {
  LayoutTrainer dry(s, LayoutTrainer::Dry{});
  // Token 0 everywhere, every target valid: the batch's shape is all a dry rank reads.
  const std::vector<int32_t> tokens(size_t(s.training.batch_size) * size_t(s.model.seq_len), 0);
  sim::StepGraph graph;
  for (int k = first; k <= last; ++k)
    graph = dry.train_step(k, tokens.data(), tokens.data(), s.training.batch_size, /*record=*/true).graph;
  return graph;
}

}  // namespace

sim::StepGraph dry_step_graph(const Scenario& s, int step) { return dry_steps_graph(s, step, step); }

sim::StepGraph steady_step_graph(const Scenario& s, bool sync_step) {
  const bool outer = replica_shapes(s.parallel).size() > 1 && s.parallel.data_sync.method != DataSyncMethod::all_reduce;
  const int tau = outer ? s.parallel.data_sync.delay_steps : 0;
  if (sync_step && tau > 0) {  // the issue step stages the exchange; the window follows it
    const int issue = steady_step(s, true);
    return dry_steps_graph(s, issue, issue + tau);
  }
  if (sync_step || !outer || sync::sync_period_steps(s) > 1) return dry_step_graph(s, steady_step(s, sync_step));
  Scenario between = s;
  between.parallel.data_sync.inner_steps = 2;
  return dry_step_graph(between, steady_step(between, false));
}

}  // namespace lowband::parallel
