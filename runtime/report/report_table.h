#pragma once
// `lowband report`: one markdown table comparing runs — simulated tokens/s, time to
// a target loss, final validation loss and perplexity, bytes sent per step, the
// measured K/V compression, and each run's time to target over the baseline's.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/report/run_dir_reader.h"

namespace lowband::report {

struct ReportRequest {
  std::optional<double> target_loss;  // nullopt: default_target_loss
  std::string baseline_dir;           // "": default_baseline; else loaded when not among the runs
};

struct ReportRow {
  std::string label, dir, compression;
  double bandwidth_bytes_per_s = 0;
  std::optional<double> tokens_per_s;          // summary sim_tokens_per_s
  std::optional<double> time_to_target_seconds;
  bool target_from_validation = true;          // false: smoothed training loss
  std::optional<double> final_val_loss, final_val_perplexity;  // perplexity = exp(loss)
  std::optional<double> bytes_per_step;        // per rank (max over ranks), mean over steps
  // The same by what they carry: "K/V" (kv, dkv), "boundaries" (act, act_grad),
  // "weights" (grad_sync, pseudo_grad), "other" (loss, the codecs' own); only those sent.
  std::vector<std::pair<std::string, double>> bytes_per_step_by_group;
  std::optional<double> kv_bytes_saved_fraction, kv_bytes_ratio;  // measured
  std::optional<double> time_to_target_vs_baseline;
  std::optional<TimeProjection> projection;    // summary time_projection
  bool diverged = false;
  std::optional<double> steps_done, steps_planned;
  // network.dynamics: simulated time beyond the nominal network's (summary
  // sim_lost_seconds, whole run); absent on a constant network.
  std::optional<double> lost_seconds;
};

struct Report {
  double target_loss = 0;
  bool target_given = false;
  std::optional<size_t> baseline;              // index into rows
  bool baseline_given = false;
  std::vector<ReportRow> rows;
  std::vector<std::string> notes;
};

// Adds the --baseline run to `loaded` when it is not there yet (relabelling), then
// computes every row. InputError naming "--baseline" for a directory it cannot read.
Report build_report(LoadedRuns loaded, const ReportRequest& request);
std::string report_markdown(const Report& report);

}  // namespace lowband::report
