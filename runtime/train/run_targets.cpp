#include "runtime/train/run_targets.h"

#include <deque>
#include <filesystem>
#include <stdexcept>

#include "common/error.h"
#include "runtime/compress/mos_ranks.h"
#include "runtime/parallel/layout.h"
#include "runtime/scenario/load.h"

namespace lowband::train {
namespace {

// Whether the codec shrank this step's messages (false in a MoS warm-up).
bool compressed(const parallel::StepRecord& record, const parallel::CompressedTraffic& traffic) {
  return traffic.sent(record.graph) < 0.999 * traffic.uncompressed_bytes_per_step;
}

ReplayedStep projected(const sim::ReplayResult& step) {
  ReplayedStep out;
  out.replay = step;
  out.seconds = step.step_seconds;
  return out;
}

}  // namespace

Target::Target(const Scenario& s, const std::string& out_dir, bool cache_replays, bool writer)
    : scenario(s), files(out_dir, writer),
      replayer(scenario.network, cache_replays, scenario.training.checkpoint_every) {
  if (scenario.projection.scenario) projection.emplace(*scenario.projection.scenario);
}

RunTargets::RunTargets(const Scenario& trained, const std::string& out_dir, const std::vector<RetimeTarget>& retimes,
                       bool cache_replays, bool writer) {
  // Who makes a round is decided by the trained network's replay: another
  // network would have trained otherwise.
  const DataSyncConfig& d = trained.parallel.data_sync;
  if (d.partial_participation() && (!retimes.empty() || trained.projection.scenario))
    throw InputError(d.deadline_seconds >= 0 ? "parallel.data_sync.deadline_seconds" : "parallel.data_sync.quorum",
                     "partial participation trains what its own network's replay decides: it cannot be timed on "
                     "another network (a retime target or a projection); train it on each");
  targets_.push_back(std::make_unique<Target>(trained, out_dir, cache_replays, writer));
  for (const RetimeTarget& t : retimes)
    targets_.push_back(std::make_unique<Target>(t.scenario, t.out_dir, cache_replays, writer));
}

void RunTargets::start_totals(const RunFacts& facts, const Checkpoint* resumed) {
  traffic_ = facts.traffic;
  for (size_t index = 0; index < targets_.size(); ++index) {
    Target& t = *targets_[index];
    RunTotals& totals = t.totals;
    if (resumed) {  // the totals as they were at the checkpoint
      totals = resumed->targets[index].totals;
      totals.last_bound.reset();
      totals.header["run_dir"] = t.files.dir();
      t.replayer.wall_seconds = totals.replay_wall_seconds;
    } else {
      totals.steps_planned = facts.steps;
      totals.tokens_per_step = t.projection ? t.projection->tokens_per_step() : facts.tokens_per_step;
      totals.uncompressed_kv_bytes_per_step = facts.traffic.uncompressed_bytes_per_step;
      totals.header = {{"scenario", t.scenario.name},
                       {"scenario_source", t.scenario.source},
                       {"run_dir", t.files.dir()},
                       {"network", sim::describe(t.scenario.network)},
                       {"network_model", sim::to_string(t.scenario.network.model)},
                       {"codec", facts.traffic.codec},
                       {"data", facts.data},
                       {"ranks", facts.ranks},
                       {"compute_timing", facts.timing == parallel::ComputeTiming::measured ? "measured" : "profile"}};
      if (index > 0) totals.header["trained_in"] = main_dir();
      if (t.projection) totals.header["time_projection"] = t.projection->describe();
    }
    // What this run derives from its scenario and facts, resumed or not.
    totals.traffic = facts.traffic;
    // (A run resumed from a checkpoint written before the field existed gets it too.)
    if (const auto ranks = compress::mos_ranks(t.scenario)) totals.header["codec_ranks"] = compress::to_json(*ranks);
    totals.relay_node = parallel::Layout(t.scenario.parallel).relay_node();
    totals.changing_network = !t.projection && !t.scenario.network.dynamics.empty();
    totals.restarting = !t.projection && t.scenario.network.restart.has_value();
    if (!t.projection) totals.links = std::make_shared<const sim::NetworkLinks>(t.scenario.network);
  }
}

void RunTargets::start_files(bool resumed) {
  for (auto& t : targets_) {
    if (!resumed) t->files.remove_steps();  // of a run that stopped before its first checkpoint
    t->files.write_scenario(to_json(t->scenario).dump(2) + "\n");
    t->files.write_curve(t->totals.curve_csv);
    t->files.write_summary(t->totals.summary_json());
  }
  files_started_ = true;
}

void RunTargets::add(const std::vector<PendingStep>& steps) {
  // Every graph once: a step's, or a window's on its last step (the steps before
  // it in the window have none); a window's steps each with its own part of it,
  // for their figures.
  std::vector<const sim::StepGraph*> graphs;
  std::vector<const PendingStep*> pending;
  std::deque<PendingStep> window_steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    pending.push_back(&steps[i]);
    if (steps[i].record.window_open) continue;
    const sim::StepGraph& graph = steps[i].record.graph;
    graphs.push_back(&graph);
    const int n = graph.steps();
    if (n == 1) continue;
    if (size_t(n) > i + 1)
      throw std::logic_error("RunTargets::add: a window of " + std::to_string(n) + " steps after " +
                             std::to_string(i) + " pending steps");
    for (int k = 0; k < n; ++k) {
      const size_t at = i + 1 - size_t(n) + size_t(k);
      window_steps.push_back(steps[at]);
      window_steps.back().record.graph = graph.steps_part(k, k);
      pending[at] = &window_steps.back();
    }
  }
  if (!steps.empty() && steps.back().record.window_open) throw std::logic_error("RunTargets::add: a window still open");
  for (auto& t : targets_) {
    // A projected target takes its step times from estimate: nothing to replay.
    const std::vector<ReplayedStep> replays =
        t->projection ? std::vector<ReplayedStep>{} : t->replayer.replay(graphs, t->totals.sim_total_seconds);
    t->totals.replay_wall_seconds = t->replayer.wall_seconds;
    for (size_t i = 0; i < pending.size(); ++i) {
      ReplayedStep replayed = t->projection ? projected(t->projection->step(compressed(pending[i]->record, traffic_)))
                                            : replays[i];
      replayed.seconds += pending[i]->round_wait_seconds;  // the participants idle until the round closes
      t->totals.add(*pending[i], replayed, t->files);
    }
    t->files.write_summary(t->totals.summary_json());
  }
}

std::vector<sim::ReplayResult> RunTargets::replay_round(const std::vector<const sim::StepGraph*>& graphs) {
  Target& t = *targets_.front();
  std::vector<sim::ReplayResult> out = t.replayer.replay_round(graphs, t.totals.sim_total_seconds);
  t.totals.replay_wall_seconds = t.replayer.wall_seconds;
  return out;
}

void RunTargets::diverged(const std::string& message) {
  for (auto& t : targets_) {
    t->totals.diverged = true;
    t->totals.message = message;
  }
}

std::vector<std::string> RunTargets::dirs() const {
  std::vector<std::string> out;
  for (const auto& t : targets_) out.push_back(t->files.dir());
  return out;
}

std::vector<TargetCheckpoint> RunTargets::checkpoints() const {
  std::vector<TargetCheckpoint> out;
  for (const auto& t : targets_)
    out.push_back({std::filesystem::absolute(t->files.dir()).string(), to_json(t->scenario).dump(), t->totals,
                   steps_file_bytes(t->files.dir())});
  return out;
}

std::vector<RunResult::Retimed> RunTargets::retimed() const {
  std::vector<RunResult::Retimed> out;
  for (size_t i = 1; i < targets_.size(); ++i)
    out.push_back({targets_[i]->files.dir(), targets_[i]->totals.sim_total_seconds, targets_[i]->totals.summary_json()});
  return out;
}

}  // namespace lowband::train
