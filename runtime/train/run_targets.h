#pragma once
// The networks one training is timed on: the trained scenario's first, then each
// retime target (RunOptions::also_timed_on). Each has its run directory, running
// totals and replays — or, with Scenario::projection, the projected scenario's
// step times instead of replays.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/parallel/trainer.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/projection.h"
#include "runtime/train/replayer.h"
#include "runtime/train/run_files.h"

namespace lowband::train {

struct Target {
  Target(const Scenario& s, const std::string& out_dir, bool cache_replays, bool writer);
  Scenario scenario;
  RunFiles files;
  RunTotals totals;
  Replayer replayer;
  std::optional<StepTimeProjection> projection;
};

// What every target's summary.json header and totals start from.
struct RunFacts {
  int steps = 0;
  double tokens_per_step = 0;  // the trained batch's (a projection gives its own)
  parallel::CompressedTraffic traffic;
  std::string data;            // the dataset's description
  int ranks = 0;
  parallel::ComputeTiming timing = parallel::ComputeTiming::profile;
};

class RunTargets {
 public:
  // cache_replays: replay each distinct graph once (profile timing).
  RunTargets(const Scenario& trained, const std::string& out_dir, const std::vector<RetimeTarget>& retimes,
             bool cache_replays, bool writer);

  // Every target's totals for a new run, or (resumed) as they were at the checkpoint.
  void start_totals(const RunFacts& facts, const Checkpoint* resumed);
  // Writes scenario.json, curve.csv and summary.json of every target (once; a
  // fresh run drops the steps.jsonl of a run that stopped before its first checkpoint).
  void start_files(bool resumed);
  bool files_started() const { return files_started_; }
  // Times `pending` on every target (replays or projection) and appends the steps.
  void add(const std::vector<PendingStep>& pending);
  // The trained network's replay of a round's steps (Replayer::replay_round),
  // from the run's clock now.
  std::vector<sim::ReplayResult> replay_round(const std::vector<const sim::StepGraph*>& graphs);
  // Marks every target's totals diverged with `message`.
  void diverged(const std::string& message);

  RunTotals& main() { return targets_.front()->totals; }
  const std::string& main_dir() const { return targets_.front()->files.dir(); }
  std::vector<std::string> dirs() const;
  std::vector<TargetCheckpoint> checkpoints() const;
  std::vector<RunResult::Retimed> retimed() const;  // the targets after the first

 private:
  std::vector<std::unique_ptr<Target>> targets_;
  parallel::CompressedTraffic traffic_;
  bool files_started_ = false;
};

}  // namespace lowband::train
