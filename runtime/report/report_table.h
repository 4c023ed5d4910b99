#pragma once
// `lowband report`: one markdown table comparing arms — runs grouped by seed
// (seed_groups.h) — with the mean and 95 % Student-t interval over seeds of
// simulated tokens/s, time to several target losses and final validation loss;
// Welch's test of each arm's final loss against the baseline's; bytes sent per
// step, the measured K/V compression, and each arm's time to target over the
// baseline's.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/report/report_answers.h"
#include "runtime/report/run_dir_reader.h"
#include "runtime/report/stats.h"

namespace lowband::report {

// Default targets: these fractions of the reference arm's drop in validation loss,
// from its first evaluation to its last (1: its final loss).
inline const std::vector<double> kDefaultTargetFractions = {0.5, 0.75, 0.9, 1.0};
// Two arms' final losses "differ beyond their noise" when Welch's p is below this.
inline constexpr double kSignificance = 0.05;

struct ReportRequest {
  std::vector<double> target_losses;  // empty: from target_fractions of the reference arm
  std::vector<double> target_fractions = kDefaultTargetFractions;
  std::string baseline_dir;           // "": default_baseline; else loaded when not among the runs
  double answer_threshold = kDefaultAnswerThreshold;  // the recall task's remote accuracy to reach
};

struct Target {
  double loss = 0;
  std::optional<double> fraction;  // of the reference arm's drop; nullopt: given by --target-loss
};

// One run's values.
struct ReportRow {
  std::string label, dir, compression;
  double bandwidth_bytes_per_s = 0;
  std::optional<double> tokens_per_s;          // summary sim_tokens_per_s
  std::vector<std::optional<double>> time_to_target_seconds;  // per target; nullopt: never reached
  bool target_from_validation = true;          // false: smoothed training loss
  std::optional<double> final_val_loss;
  std::optional<double> bytes_per_step;        // per rank (max over ranks), mean over steps
  // The same by what they carry: "K/V" (kv, dkv), "boundaries" (act, act_grad),
  // "weights" (grad_sync, pseudo_grad), "other" (loss, the codecs' own); only those sent.
  std::vector<std::pair<std::string, double>> bytes_per_step_by_group;
  std::optional<double> kv_bytes_saved_fraction, kv_bytes_ratio;  // measured
  std::string kept_ranks;                      // MoS: "K rank 3 / V rank 6 of 128; 3 of 4 layers", else ""
  std::optional<TimeProjection> projection;    // summary time_projection
  bool diverged = false;
  std::optional<double> steps_done, steps_planned;
  // network.dynamics: simulated time beyond the nominal network's (summary
  // sim_lost_seconds, whole run); absent on a constant network.
  std::optional<double> lost_seconds;
};

// One arm: its runs' values over seeds.
struct TargetTime {
  int reached = 0;                      // seeds that reach the target
  std::optional<MeanInterval> seconds;  // only when every seed reaches it
  std::optional<double> vs_baseline;    // mean time over the baseline arm's mean time
  // Welch's test of the times against the baseline's (two or more seeds a side, all arriving).
  std::optional<WelchTest> vs_baseline_test;
};
struct ArmRow {
  std::string label;
  std::vector<size_t> rows;             // into Report::rows
  std::vector<int64_t> seeds;
  std::optional<MeanInterval> tokens_per_s, final_val_loss;  // nullopt where a run lacks the value
  std::vector<TargetTime> targets;      // per Report::targets
  // Final validation loss minus the baseline arm's: Welch's test with two or more
  // seeds a side; else the plain difference of the means, untested.
  std::optional<WelchTest> vs_baseline_test;
  std::optional<double> vs_baseline_difference;
};

struct Report {
  std::vector<Target> targets;
  std::string target_reference;        // the arm whose drop defines the targets ("" when given)
  std::optional<size_t> baseline;      // index into arms
  bool baseline_given = false;
  std::vector<ReportRow> rows;         // one per run
  std::vector<ArmRow> arms;            // runs grouped by seed
  std::vector<std::string> notes;
  std::optional<AnswerTable> answers;  // the keyed-recall task's table, where runs evaluated it
};

// Adds the --baseline run to `loaded` when it is not there yet (relabelling), then
// computes every row and arm. InputError naming "--baseline" for a directory it
// cannot read, "--target-fraction" when the reference arm has no drop to take
// fractions of.
Report build_report(LoadedRuns loaded, const ReportRequest& request);
std::string report_markdown(const Report& report);

// The report's cells, for its other tables too: "2.3825 ± 0.020" (one seed: the
// value alone; none: "—"), and a difference from the baseline with Welch's test:
// "+0.0469 ± 0.066, p 0.12: within noise" ("(1 seed a side: untested)" without one).
std::string interval_cell(const std::optional<MeanInterval>& m, int digits);
std::string difference_text(double difference, const std::optional<WelchTest>& test, int decimals);

}  // namespace lowband::report
