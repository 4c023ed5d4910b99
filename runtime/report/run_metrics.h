#pragma once
// What `lowband plot` and `lowband report` compute from run directories: the loss
// curve that decides "time to target loss", the default target, the baseline run.
#include <optional>
#include <string>
#include <vector>

#include "runtime/report/run_dir_reader.h"

namespace lowband::report {

// Steps in the trailing mean of the training loss used when a run has no
// validation loss (a single step's loss is too noisy to cross a target once).
constexpr int kTrainLossSmoothingSteps = 10;

struct LossPoint {
  double sim_seconds = 0;
  double loss = 0;
};

// The loss curve that decides time to target: the validation losses where the run
// evaluated (finite ones) when there are at least two, else (a run evaluated only
// at its end, or never) the training loss as a trailing mean over
// kTrainLossSmoothingSteps steps.
struct TargetCurve {
  bool validation = true;  // false: smoothed training loss
  std::vector<LossPoint> points;
};
TargetCurve target_curve(const LoadedRun& run);

// Simulated seconds at which `curve` first reaches `target_loss` (loss <= target),
// interpolated linearly in time between the point before and the first point at or
// below the target; the first point itself when it is already there. nullopt: not reached.
std::optional<double> time_to_target_seconds(const TargetCurve& curve, double target_loss);

// The last finite loss of the run's target curve; nullopt when there is none.
std::optional<double> final_target_loss(const LoadedRun& run);

// Default target: the highest final loss (target_curve) among the runs, so that every
// run reaches it. InputError naming "--target-loss" when no run has a finite loss.
double default_target_loss(const std::vector<LoadedRun>& runs);

// Index of the default baseline: the uncompressed run with the highest bandwidth
// (the first such on a tie); nullopt when no run is uncompressed.
std::optional<size_t> default_baseline(const std::vector<LoadedRun>& runs);

// Index of the run loaded from `dir` (same directory on disk), nullopt when none is.
std::optional<size_t> find_run(const std::vector<LoadedRun>& runs, const std::string& dir);

// For people: "2.5 h", "12.3 min", "4.57 s", "35 ms"; and a time axis unit
// chosen by the largest value: {"h", 3600}, {"min", 60} or {"s", 1}.
std::string format_time(double seconds);
struct TimeUnit {
  std::string name;
  double seconds = 1;
};
TimeUnit time_unit_for(double largest_seconds);

// `x` with about `digits` significant digits, never in exponent notation below 1e15.
std::string format_number(double x, int digits);

}  // namespace lowband::report
