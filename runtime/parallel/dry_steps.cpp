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

std::vector<sim::StepGraph> steady_sync_graphs(const Scenario& s) {
  const DataSyncConfig& d = s.parallel.data_sync;
  if (!sync::outer_syncs(s) || d.fragments == 1) return {steady_step_graph(s, true)};
  const int first = steady_step(s, true) + 1 - d.inner_steps;  // the steady period's first step
  std::vector<sim::StepGraph> out;
  for (int f = 1; f <= d.fragments; ++f) {  // in the order they issue: 1, ..., F − 1, then 0
    const int fragment = f % d.fragments;
    const int issue = fragment == 0 ? first + d.inner_steps - 1 : first + sync::fragment_shift_steps(d, fragment) - 1;
    out.push_back(dry_steps_graph(s, issue, issue + d.delay_steps));
  }
  return out;
}

sim::StepGraph steady_step_graph(const Scenario& s, bool sync_step) {
  const bool outer = sync::outer_syncs(s);
  if (!sync_step && outer && s.parallel.data_sync.fragments > 1) {  // a step of no fragment's sync
    Scenario whole = s;
    whole.parallel.data_sync.fragments = 1;
    return steady_step_graph(whole, false);
  }
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
