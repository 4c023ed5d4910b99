#pragma once
// Reading what `lowband run` (runtime/train/run.h) and `lowband sweep` wrote, for
// `lowband plot` and `lowband report`. A run directory holds scenario.json,
// curve.csv and summary.json; a sweep directory holds index.json listing its points'
// run directories. Fields other commands may or may not write yet are read
// defensively: absent means "not there". A missing or malformed file is an
// InputError naming the file.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lowband::report {

struct CurveRow {
  int step = 0;
  double sim_seconds = 0;
  double train_loss = 0;            // NaN when the run wrote "nan"
  std::optional<double> val_loss;   // absent: not evaluated at this step
  // Bytes all ranks sent in steps 1..step (steps.jsonl "bytes_sent_all_ranks.total",
  // summed); absent where the run's steps.jsonl does not have them.
  std::optional<double> cumulative_bytes_all_ranks = std::nullopt;
};

// An evaluation of the keyed-recall task (training.data_source "recall"): accuracy on
// the answers only remote K/V carry and on the local ones (steps.jsonl
// val_answer_remote_accuracy, val_answer_local_accuracy).
struct AnswerPoint {
  int step = 0;
  double sim_seconds = 0;  // simulated time at the end of the step
  double remote_accuracy = 0, local_accuracy = 0;
};

struct LoadedRun {
  std::string dir;                  // as given, or SWEEP_DIR/<point's run_dir>
  std::string name;                 // the scenario's name
  std::string label;                // name for legends and tables, unique among the runs loaded together
  nlohmann::json scenario;          // scenario.json, as the run ran (upgrade_recorded_scenario)
  nlohmann::json summary;           // summary.json
  std::string sweep;                // the sweep's name; "" outside a sweep
  nlohmann::json sweep_settings;    // the sweep point's settings (an object); null outside a sweep
  std::vector<CurveRow> curve;      // curve.csv, in step order
  std::vector<AnswerPoint> answers; // steps.jsonl, in step order; empty unless the recall task
};

struct LoadedRuns {
  std::vector<LoadedRun> runs;
  std::vector<std::string> notes;   // sweep points left out, one line each
};

// Loads one run directory. InputError(file, why) for a missing or malformed file.
LoadedRun load_run_dir(const std::string& dir);

// Each path is a run directory or a sweep directory (index.json), expanded to its
// points whose status is "done" (a point without a status is taken when its
// summary.json exists; the others are left out with a note). Gives every run a
// unique label. InputError naming `place` when nothing is left to read.
// labels (--labels): empty, or one per path, naming that path's runs in place of
// their scenario's name (arms of one scenario that differ by --set); InputError
// naming `labels_place` for another count.
LoadedRuns load_runs(const std::vector<std::string>& paths, const std::string& place,
                     const std::vector<std::string>& labels = {}, const std::string& labels_place = "--labels");

// Labels: the scenario name; names shared by several runs get the sweep settings
// (or the directory's name, then a number) appended.
void assign_labels(std::vector<LoadedRun>& runs);

// The network whose time the run reports: the projected scenario's network when the
// run's step time was projected (scenario.json "projection.scenario"), else its own.
nlohmann::json timed_network(const LoadedRun& run);

// The "bandwidth" of a run, bytes/s: network.bandwidth where the topology has one
// (star, full_mesh: per-node or per-pair overrides are ignored), else the slowest link
// listed (clusters: access links and WAN links; explicit: links). Of timed_network.
// InputError naming scenario.json when no bandwidth can be found.
double run_bandwidth_bytes_per_s(const LoadedRun& run);

// Which compression a run used, as a series name for "by compression" figures: the
// sweep settings other than bandwidths (keys ending in "bandwidth") and the seed, e.g.
// "compression.ratio=0.9", or, outside a
// sweep, from scenario.json ("uncompressed", "mos K 0.9 / V 0.9", "topk 0.1", "quantize 4-bit").
std::string compression_label(const LoadedRun& run);
// No compression: scenario.json compression.method is "none" (absent counts as none).
bool is_uncompressed(const LoadedRun& run);

// summary.json values by dotted path ("bytes_sent_per_rank_per_step.total"); absent
// or not a finite number: nullopt.
std::optional<double> summary_number(const LoadedRun& run, const std::string& dotted_path);
// summary.json "time_projection": the step time was taken from `estimate` of a
// larger scenario. nullopt when the time was not projected.
struct TimeProjection {
  std::string scenario;     // its name
  std::string description;  // "" when none given
  std::optional<double> bytes_per_step;  // per rank at the projected scale ("bytes_per_rank_per_step.total")
};
std::optional<TimeProjection> time_projection(const LoadedRun& run);

}  // namespace lowband::report
