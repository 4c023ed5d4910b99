#pragma once
// The figures of `lowband plot`, as data: which series, which axes. Drawing them is
// plot_gnuplot.h's job.
//   loss_vs_time                 loss vs simulated wall-clock time, one train and one
//                                validation series per run (the MoS paper's Figure 2;
//                                validation only beyond a few runs, LossCurves)
//   loss_vs_step                 the same against the step
//   val_loss_vs_time_log         validation loss vs simulated time, log x (for runs
//                                whose step times differ by orders of magnitude)
//   loss_vs_bytes                training and validation loss vs the bytes all ranks
//                                have sent so far (steps.jsonl), one pair per run
//   tokens_per_s_vs_bandwidth    simulated tokens/s, one series per compression, log x
//   time_to_target_vs_bandwidth  simulated time to the target loss, one series per
//                                compression, log x (runs that never reach it left out)
//   val_loss_vs_time_seeds       per arm (runs that differ only by seed, seed_groups.h)
//                                of two or more seeds: the mean validation loss at
//                                each evaluation against the mean simulated time,
//                                in a band of the 95 % Student-t interval over seeds
//   remote_accuracy_vs_step_seeds   keyed-recall runs (training.data_source "recall"):
//                                per arm, the mean accuracy on the answers only remote
//                                K/V carry at each evaluation, in a band over seeds
//   remote_accuracy_vs_kv_bytes  keyed-recall runs: per arm, that accuracy's area (its
//                                mean over the run) against the K/V bytes a rank sent
//                                over the run, one curve per codec through its arms
//                                (figures_recall.cpp)
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/report/run_dir_reader.h"

namespace lowband::report {

struct Series {
  enum class Style { lines, linespoints, error_lines };  // error_lines: y_band as error bars, not a band
  std::string title;
  std::vector<std::pair<double, double>> points;  // (x, y), finite
  Style style = Style::lines;
  int color = 0;  // palette index: a run's train and validation series share one
  // Optional: a shaded y interval (low, high) at each point, drawn behind the line.
  std::vector<std::pair<double, double>> y_band = {};
};

// A shaded x range behind the series (an outage of a run), in the figure's x units.
struct Band {
  double x_from = 0, x_to = 0;
  int color = 0;  // the run's palette index, as its series
};

struct Figure {
  std::string name;                  // file stem
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;
  bool x_is_bandwidth = false;       // x in bits/s, tics as "100 Mbps"
  bool x_from_zero = false;          // time axes start at 0
  bool y_is_fraction = false;        // y in [0, 1] (accuracies): the axis shows [0, 1.05]
  std::vector<Series> series;        // only series with points
  std::vector<std::string> notes;    // what was left out and why
  std::vector<Band> bands;           // shaded behind the series
  std::string bands_title;           // the key's entry for the bands ("" when none)
};

// The intervals, in seconds of the run's simulated clock within [0, its
// sim_total_seconds (summary.json; else the last curve row's time)], during which a
// node or link of the run's network was down: any state trace of scenario.json's
// network.dynamics at 0. Sorted, disjoint (overlapping traces give their union).
// Empty without state traces, and for runs whose time was projected (the replay
// leaves dynamics out there). Parses scenario.json with the scenario loader:
// InputError or SchemaError where it does not parse.
std::vector<std::pair<double, double>> outage_intervals(const LoadedRun& run);

// The key's entry for outage bands.
inline constexpr const char* kOutageBandsTitle = "shaded: a node or link down (network.dynamics)";

// Which loss curves the loss figures draw per run. automatic: train and validation
// for up to kMostRunsWithTrainingCurves runs, validation only beyond (a dozen noisy
// training curves hide every validation curve); a run without validation losses
// keeps its training curve either way.
enum class LossCurves { automatic, both, validation };
inline constexpr size_t kMostRunsWithTrainingCurves = 4;

// `target_loss` is the loss for time_to_target_vs_bandwidth; `target_origin` says
// where it came from, for the title ("highest final loss" or "--target-loss").
std::vector<Figure> build_figures(const std::vector<LoadedRun>& runs, double target_loss,
                                  const std::string& target_origin, LossCurves curves = LossCurves::automatic);

// The keyed-recall figures, where some run evaluated the task (else none).
std::vector<Figure> recall_figures(const std::vector<LoadedRun>& runs);

}  // namespace lowband::report
