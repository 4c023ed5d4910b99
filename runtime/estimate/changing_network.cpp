// `estimate` on a changing network (network.dynamics): the layout's steps replayed
// back to back on the run's clock, as `lowband run` replays a run's steps.
#include <algorithm>
#include <chrono>

#include "runtime/estimate/estimate.h"
#include "runtime/estimate/layout_steps.h"
#include "runtime/sync/sync_period.h"
#include "sim/run_clock.h"

namespace lowband::estimate_detail {

// Each sync graph where it begins in the period (LayoutSteps::sync_offsets: a
// run syncs after each period's last step, each fragment at its own), else the
// step between syncs; with one graph every step is alike. A window
// (data_sync.delay_steps > 0) stands for the steps it holds. nominal_seconds: each graph's step on the nominal
// network. Restarts (network.restart) go back to the last multiple of
// checkpoint_every, as a run's do.
ChangingNetworkSection replay_on_changing_network(const sim::NetworkSpec& network, const LayoutSteps& steps,
                                                  const std::vector<double>& nominal_seconds, int step_count,
                                                  int checkpoint_every, double tokens_per_step) {
  ChangingNetworkSection c;
  c.steps = step_count;
  c.restart_policy = network.restart.has_value();
  const auto wall_start = std::chrono::steady_clock::now();
  const int period = steps.period_steps;
  // Training step k (from 0): the sync graph that begins there (a window only
  // after its issue, and only while the run lasts it whole), else the step
  // between syncs.
  auto graph_at = [&](int k) -> size_t {
    if (steps.graphs.size() == 1) return 0;
    for (int i = 0; i < steps.sync_graphs; ++i)
      if (k % period == steps.sync_offsets[size_t(i)] && (!steps.windows || k >= 1) &&
          k + steps.graphs[size_t(i)].steps() <= step_count)
        return size_t(i);
    return size_t(steps.sync_graphs);
  };
  std::vector<const sim::StepGraph*> run;
  for (int k = 0; k < step_count;) {
    const size_t g = graph_at(k);
    run.push_back(&steps.graphs[g]);
    c.nominal_total_seconds += nominal_seconds[g];
    k += steps.graphs[g].steps();
  }
  sim::RunClock clock(network, checkpoint_every);
  for (const sim::ClockedStep& step : clock.replay(run, 0.0)) {
    c.total_seconds += step.seconds;
    c.slowest_step_seconds = std::max(c.slowest_step_seconds, step.seconds);
    c.restarts += step.restarts;
  }
  c.lost_seconds = c.total_seconds - c.nominal_total_seconds;
  c.mean_step_seconds = step_count > 0 ? c.total_seconds / step_count : 0.0;
  c.tokens_per_s = c.total_seconds > 0 ? tokens_per_step * step_count / c.total_seconds : 0.0;
  c.replay_wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return c;
}

}  // namespace lowband::estimate_detail
