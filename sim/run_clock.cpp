#include "sim/run_clock.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace lowband::sim {

namespace {

// Graphs per SimGrid child: each child builds the platform once; the clock
// carries over from one child to the next (ReplayOptions::start_seconds).
constexpr size_t kGraphsPerChild = 500;

}  // namespace

RunClock::RunClock(const NetworkSpec& network, int checkpoint_every)
    : network_(network), checkpoint_every_(checkpoint_every) {}

std::vector<ClockedStep> RunClock::replay(const std::vector<const StepGraph*>& graphs, double run_seconds) {
  std::vector<ClockedStep> out(graphs.size());
  std::map<const StepGraph*, std::shared_ptr<const StepGraph>> kept;  // this call's copies
  size_t next = 0;                    // the first step of `graphs` not done
  double next_started = run_seconds;  // when it first started
  int restarts = 0;                   // of that step so far
  std::vector<const StepGraph*> redo;  // after a restart: the steps since the checkpoint, again
  while (next < graphs.size()) {
    std::vector<const StepGraph*> batch = redo;
    const size_t fresh = std::min(graphs.size() - next, kGraphsPerChild);
    batch.insert(batch.end(), graphs.begin() + static_cast<long>(next), graphs.begin() + static_cast<long>(next + fresh));
    ReplayOptions options;
    options.start_seconds = run_seconds;
    const std::vector<ReplayResult> results = replay_batch(network_, batch, options);
    for (size_t j = 0; j < results.size(); ++j) {
      const ReplayResult& r = results[j];
      run_seconds += r.step_seconds;
      if (r.gave_up) break;
      if (j < redo.size()) continue;  // a step done before, done again
      ClockedStep& step = out[next];
      step.replay = r;
      step.seconds = run_seconds - next_started;
      step.restarts = restarts;
      restarts = 0;
      next_started = run_seconds;
      ++next;
      steps_done_ += graphs[next - 1]->steps();  // a window's graph holds several
      if (network_.restart) {
        if (checkpoint_every_ > 0 && steps_done_ % checkpoint_every_ == 0) {
          since_checkpoint_.clear();
        } else {
          auto& copy = kept[graphs[next - 1]];
          if (!copy) copy = std::make_shared<const StepGraph>(*graphs[next - 1]);
          since_checkpoint_.push_back(copy);
        }
      }
    }
    redo.clear();
    if (!results.empty() && results.back().gave_up) {
      run_seconds += network_.restart->relaunch_seconds;
      // A random outage's tail can go past the bound the scenario was checked against.
      if (++restarts > kMaxRelaunchesPerOutage)
        throw InputError("network.restart", "step " + std::to_string(steps_done_ + 1) + " was relaunched " +
                                                std::to_string(restarts - 1) + " times, the most one outage may cost: "
                                                "raise stall_timeout or relaunch, or shorten the outages");
      for (const auto& g : since_checkpoint_) redo.push_back(g.get());
    }
  }
  return out;
}

}  // namespace lowband::sim
