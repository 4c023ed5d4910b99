// `estimate` on a changing network (network.dynamics): the layout's steps replayed
// back to back on the run's clock, as `lowband run` replays a run's steps.
#include <algorithm>
#include <chrono>

#include "runtime/estimate/estimate.h"
#include "runtime/estimate/layout_steps.h"
#include "sim/replay.h"

namespace lowband::estimate_detail {

namespace {

// Graphs per SimGrid child: each child builds the platform once; the run's clock
// carries over from one child to the next (sim::ReplayOptions::start_seconds).
constexpr int kStepsPerChild = 500;

}  // namespace

// Step k (from 1) is the sync step where k is a multiple of the period (a run
// syncs after each period's last step), else the step between syncs; with one
// graph every step is alike. nominal_seconds: each graph's step on the nominal network.
ChangingNetworkSection replay_on_changing_network(const sim::NetworkSpec& network, const LayoutSteps& steps,
                                                  const std::vector<double>& nominal_seconds, int step_count,
                                                  double tokens_per_step) {
  ChangingNetworkSection c;
  c.steps = step_count;
  const auto wall_start = std::chrono::steady_clock::now();
  const int period = steps.graphs.size() > 1 ? steps.period_steps : 1;
  auto graph_of = [&](int k) -> size_t { return steps.graphs.size() > 1 && k % period != 0 ? 1 : 0; };
  for (int first = 1; first <= step_count; first += kStepsPerChild) {
    const int last = std::min(step_count, first + kStepsPerChild - 1);
    std::vector<const sim::StepGraph*> batch;
    for (int k = first; k <= last; ++k) batch.push_back(&steps.graphs[graph_of(k)]);
    sim::ReplayOptions options;
    options.start_seconds = c.total_seconds;
    const std::vector<sim::ReplayResult> replayed = sim::replay_batch(network, batch, options);
    for (int k = first; k <= last; ++k) {
      const double step = replayed[static_cast<size_t>(k - first)].step_seconds;
      c.total_seconds += step;
      c.nominal_total_seconds += nominal_seconds[graph_of(k)];
      c.slowest_step_seconds = std::max(c.slowest_step_seconds, step);
    }
  }
  c.lost_seconds = c.total_seconds - c.nominal_total_seconds;
  c.mean_step_seconds = step_count > 0 ? c.total_seconds / step_count : 0.0;
  c.tokens_per_s = c.total_seconds > 0 ? tokens_per_step * step_count / c.total_seconds : 0.0;
  c.replay_wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return c;
}

}  // namespace lowband::estimate_detail
