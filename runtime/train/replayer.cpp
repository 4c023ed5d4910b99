#include "runtime/train/replayer.h"

#include <algorithm>
#include <chrono>
#include <sstream>

namespace lowband::train {
namespace {

// `whole`, the replay of a window of graph.steps() steps, one per step;
// `nominal`, the window on the nominal network (for the time lost).
void split_window(const sim::StepGraph& graph, ReplayedStep whole, const sim::ReplayResult& nominal,
                  std::vector<ReplayedStep>& out) {
  const std::vector<sim::TaskId> step_ends = graph.step_ends();
  const int n = int(step_ends.size()) + 1;
  if (n == 1) return out.push_back(std::move(whole));
  const auto ends = [n](const sim::ReplayResult& r) {
    std::vector<double> e = r.step_end_seconds;
    e.resize(size_t(n - 1), r.step_seconds);
    for (double& end : e)
      if (end < 0) end = r.step_seconds;  // a window that gave up before that step ended ends there
    e.push_back(r.step_seconds);
    return e;
  };
  const std::vector<double> at = ends(whole.replay), nominal_at = ends(nominal);
  // Each step's compute per rank, in one pass: its tasks lie between the step_end tasks.
  std::vector<std::vector<double>> compute(size_t(n), std::vector<double>(size_t(graph.ranks()), 0.0));
  size_t in_step = 0;
  for (size_t id = 0; id < graph.size(); ++id) {
    if (in_step < step_ends.size() && sim::TaskId(id) == step_ends[in_step]) {
      ++in_step;
      continue;
    }
    const sim::StepGraph::Record& t = graph.records()[id];
    if (t.kind == sim::TaskKind::compute) compute[in_step][size_t(t.rank)] += t.amount;
  }
  for (int i = 0; i < n; ++i) {
    ReplayedStep step;
    sim::ReplayResult& r = step.replay;
    r.step_seconds = at[size_t(i)] - (i == 0 ? 0 : at[size_t(i - 1)]);
    r.rank_compute_busy_seconds = compute[size_t(i)];
    const double busiest = *std::max_element(r.rank_compute_busy_seconds.begin(), r.rank_compute_busy_seconds.end());
    r.exposed_comm_seconds = std::max(0.0, r.step_seconds - busiest);
    r.gave_up = i == n - 1 && whole.replay.gave_up;
    step.seconds = r.step_seconds;
    const double nominal_seconds = nominal_at[size_t(i)] - (i == 0 ? 0 : nominal_at[size_t(i - 1)]);
    step.lost_seconds = step.seconds - nominal_seconds;
    if (i == n - 1) {  // the restarts the window caused, and their time
      step.restarts = whole.restarts;
      step.seconds += whole.seconds - whole.replay.step_seconds;
      step.lost_seconds += whole.seconds - whole.replay.step_seconds;
    }
    out.push_back(std::move(step));
  }
}

}  // namespace

Replayer::Replayer(const sim::NetworkSpec& network, bool cache, int checkpoint_every)
    : network_(network), nominal_(network), cache_(cache), clock_(network, checkpoint_every) {
  nominal_.dynamics.clear();
  nominal_.restart.reset();
}

std::vector<ReplayedStep> Replayer::replay(const std::vector<const sim::StepGraph*>& graphs, double run_seconds) {
  const std::vector<sim::ReplayResult> nominal = replay_constant(graphs);
  std::vector<ReplayedStep> out;
  if (network_.dynamics.empty()) {
    for (size_t i = 0; i < graphs.size(); ++i) {
      ReplayedStep whole;
      whole.seconds = nominal[i].step_seconds;
      whole.replay = nominal[i];
      split_window(*graphs[i], std::move(whole), nominal[i], out);
    }
    return out;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<sim::ClockedStep> changing = clock_.replay(graphs, run_seconds);
  wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t i = 0; i < graphs.size(); ++i) {
    ReplayedStep whole;
    whole.seconds = changing[i].seconds;
    whole.lost_seconds = changing[i].seconds - nominal[i].step_seconds;
    whole.restarts = changing[i].restarts;
    whole.replay = std::move(changing[i].replay);
    split_window(*graphs[i], std::move(whole), nominal[i], out);
  }
  return out;
}

std::vector<sim::ReplayResult> Replayer::replay_round(const std::vector<const sim::StepGraph*>& graphs,
                                                      double run_seconds) {
  if (network_.dynamics.empty()) return replay_constant(graphs);
  sim::NetworkSpec waiting = network_;
  waiting.restart.reset();
  const auto t0 = std::chrono::steady_clock::now();
  sim::ReplayOptions options;
  options.start_seconds = run_seconds;
  std::vector<sim::ReplayResult> out = sim::replay_batch(waiting, graphs, options);
  wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

std::vector<sim::ReplayResult> Replayer::replay_constant(const std::vector<const sim::StepGraph*>& graphs) {
  if (!cache_) results_.clear();
  std::vector<std::string> keys(graphs.size()), todo_keys;
  std::vector<sim::StepGraph> todo;
  for (size_t i = 0; i < graphs.size(); ++i) {
    keys[i] = cache_ ? key(*graphs[i]) : std::to_string(i);
    if (!results_.count(keys[i]) && std::find(todo_keys.begin(), todo_keys.end(), keys[i]) == todo_keys.end()) {
      todo.push_back(*graphs[i]);
      todo_keys.push_back(keys[i]);
    }
  }
  if (!todo.empty()) {
    const auto t0 = std::chrono::steady_clock::now();
    // Cached (profile timing): each graph replayed alone, from SimGrid's clock 0. In a
    // batch a graph starts at a later clock and its durations round differently in the
    // last bits, so which batch first met it (flush timing, a resume) would show.
    std::vector<sim::ReplayResult> fresh;
    if (cache_)
      for (const auto& g : todo) fresh.push_back(sim::replay(nominal_, g));
    else
      fresh = sim::replay_batch(nominal_, todo);
    wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (size_t j = 0; j < fresh.size(); ++j) results_[todo_keys[j]] = fresh[j];
  }
  std::vector<sim::ReplayResult> out;
  for (const auto& k : keys) out.push_back(results_.at(k));
  return out;
}

std::string Replayer::key(const sim::StepGraph& graph) {
  std::ostringstream k;
  k << graph.tasks().size();
  for (const auto& t : graph.tasks())
    if (t.kind == sim::TaskKind::transfer) k << "," << t.bytes;
  return k.str();
}

}  // namespace lowband::train
