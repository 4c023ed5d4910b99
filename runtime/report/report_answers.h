#pragma once
// `lowband report` on runs of the keyed-recall task (training.data_source
// "recall"): a second table, per arm, of what the task measures — accuracy on the
// answers only remote K/V carry — as scalars a comparison can test: the final
// accuracy, the steps and simulated time to a threshold, and the area under the
// accuracy curve (its mean over the run), each mean ± 95 % Student-t interval over
// seeds, and Welch's test of the area against the baseline arm's.
#include <optional>
#include <string>
#include <vector>

#include "runtime/report/run_dir_reader.h"
#include "runtime/report/stats.h"

namespace lowband::report {

struct Report;

inline constexpr double kDefaultAnswerThreshold = 0.9;

// One run's scalars (nullopt: the run has no recall evaluations, or never reaches the threshold).
struct AnswerRun {
  std::optional<double> final_remote, final_local;
  // Trapezoid area under remote accuracy over steps, from the first evaluation to
  // the last, divided by that span: a mean accuracy in [0, 1].
  std::optional<double> area;
  std::optional<double> steps_to_threshold, seconds_to_threshold;  // the first evaluation at or above it
};

struct AnswerArm {
  std::optional<MeanInterval> final_remote, final_local, area;
  int reached = 0;  // seeds that reach the threshold
  std::optional<MeanInterval> steps_to_threshold, seconds_to_threshold;  // only when every seed does
  std::optional<WelchTest> area_vs_baseline;  // two or more seeds a side
};

struct AnswerTable {
  double threshold = kDefaultAnswerThreshold;
  std::vector<AnswerRun> runs;  // per Report::rows
  std::vector<AnswerArm> arms;  // per Report::arms
};

AnswerRun answer_run(const LoadedRun& run, double threshold);
// nullopt when no run evaluated the recall task.
std::optional<AnswerTable> answer_table(const std::vector<LoadedRun>& runs, const Report& report, double threshold);
std::string answer_markdown(const Report& report, const AnswerTable& table);

}  // namespace lowband::report
