// report_markdown (report_table.h): the report as markdown, one row per arm.
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "runtime/report/report_table.h"
#include "runtime/report/run_metrics.h"
#include "runtime/scenario/units.h"

namespace lowband::report {
namespace {

const char* kNone = "—";

std::string escape_cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

// A half-width that is rounding, not spread (seeds timed alike on a profile), prints as 0.
double shown_half_width(const MeanInterval& m) {
  return *m.half_width <= 1e-9 * std::fabs(m.mean) ? 0.0 : *m.half_width;
}


std::string time_cell(const TargetTime& t, size_t seeds) {
  if (t.reached == 0) return "never";
  if (!t.seconds) return std::to_string(t.reached) + " of " + std::to_string(seeds) + " seeds";
  std::string text = format_time(t.seconds->mean);
  if (t.seconds->half_width) text += " ± " + format_time(shown_half_width(*t.seconds));
  if (t.vs_baseline) {
    // The ratio in bold where Welch's test puts the times apart beyond the seeds' noise.
    const bool apart = t.vs_baseline_test && t.vs_baseline_test->p_value < kSignificance;
    const std::string ratio = format_number(*t.vs_baseline, 3) + "×";
    text += " (" + (apart ? "**" + ratio + "**" : ratio);
    if (t.vs_baseline_test) text += ", p " + format_number(t.vs_baseline_test->p_value, 2);
    text += ")";
  }
  return text;
}

std::string seeds_cell(const ArmRow& arm) {
  std::string list;
  for (int64_t s : arm.seeds) list += (list.empty() ? "" : ",") + (s < 0 ? std::string("?") : std::to_string(s));
  if (arm.seeds.size() == 1) return "1 (seed " + list + "): no interval";
  return std::to_string(arm.seeds.size()) + " (" + list + ")";
}

std::string difference_cell(const Report& r, size_t a) {
  const ArmRow& arm = r.arms[a];
  if (r.baseline && *r.baseline == a) return "baseline";
  if (!arm.vs_baseline_difference) return kNone;
  return difference_text(*arm.vs_baseline_difference, arm.vs_baseline_test, 4);
}

// Mean over the arm's runs of a per-run value present in all of them.
template <typename Get>
std::optional<double> mean_of_runs(const Report& r, const ArmRow& arm, Get get) {
  double sum = 0;
  for (size_t i : arm.rows) {
    const std::optional<double> x = get(r.rows[i]);
    if (!x) return std::nullopt;
    sum += *x;
  }
  return sum / double(arm.rows.size());
}

std::string bytes_cell(const Report& r, const ArmRow& arm) {
  const auto bytes = mean_of_runs(r, arm, [](const ReportRow& row) { return row.bytes_per_step; });
  if (!bytes) return kNone;
  std::string text = units::format_bytes(*bytes);
  const ReportRow& first = r.rows[arm.rows.front()];
  if (first.bytes_per_step_by_group.size() < 2) return text;
  std::string parts;
  for (size_t g = 0; g < first.bytes_per_step_by_group.size(); ++g) {
    double sum = 0;
    for (size_t i : arm.rows) {
      const auto& groups = r.rows[i].bytes_per_step_by_group;
      sum += g < groups.size() ? groups[g].second : 0;
    }
    parts += (parts.empty() ? "" : ", ") + first.bytes_per_step_by_group[g].first + " " +
             units::format_bytes(sum / double(arm.rows.size()));
  }
  return text + " (" + parts + ")";
}

std::string compression_cell(const Report& r, const ArmRow& arm) {
  const auto saved = mean_of_runs(r, arm, [](const ReportRow& row) { return row.kv_bytes_saved_fraction; });
  if (!saved) return kNone;
  std::string text = format_number(100 * *saved, 3) + " %";
  const auto ratio = mean_of_runs(r, arm, [](const ReportRow& row) { return row.kv_bytes_ratio; });
  if (ratio && *ratio > 0) text += " (" + format_number(1 / *ratio, 3) + "×)";
  return text;
}

std::string run_cell(const Report& r, const ArmRow& arm, const std::map<std::string, std::string>& projection_marks) {
  std::string text = "`" + escape_cell(arm.label) + "`";
  const ReportRow& first = r.rows[arm.rows.front()];
  if (first.projection) text += " " + projection_marks.at(first.projection->scenario);
  int smoothed = 0, diverged = 0, short_runs = 0;
  for (size_t i : arm.rows) {
    const ReportRow& row = r.rows[i];
    smoothed += !row.target_from_validation;
    diverged += row.diverged;
    short_runs += row.steps_done && row.steps_planned && *row.steps_done < *row.steps_planned;
  }
  if (smoothed) text += " ¹";
  const std::string of = arm.rows.size() > 1 ? " of " + std::to_string(arm.rows.size()) : "";
  if (diverged) text += " (" + (of.empty() ? "" : std::to_string(diverged) + of + " ") + "diverged)";
  if (short_runs && arm.rows.size() == 1)
    text += " (" + std::to_string(int64_t(*first.steps_done)) + "/" + std::to_string(int64_t(*first.steps_planned)) + " steps)";
  else if (short_runs)
    text += " (" + std::to_string(short_runs) + of + " stopped early)";
  return text;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%g %%", 100 * fraction);
  return text;
}

std::string target_header(const Target& t) {
  std::string text = "time to loss " + format_number(t.loss, 4);
  if (t.fraction) text += " (" + percent(*t.fraction) + ")";
  return text;
}

void write_notes(std::ostringstream& out, const Report& r, std::map<std::string, std::string>& marks) {
  out << "- Rows are arms: the runs that differ only by `training.seed` (data order and initialisation). Values are "
         "the mean over an arm's seeds ± the half-width of its 95 % Student-t interval (n − 1 degrees of freedom); "
         "an arm of 1 seed has no interval (`lowband sweep --seeds N` runs N).\n";
  if (!r.target_reference.empty()) {
    out << "- Targets: the validation loss of `" << escape_cell(r.target_reference) << "` at ";
    for (size_t t = 0; t < r.targets.size(); ++t)
      out << (t ? (t + 1 == r.targets.size() ? " and " : ", ") : "") << percent(*r.targets[t].fraction);
    out << " of its drop from its first evaluation to its last (mean over its seeds; 100 %: its final loss). "
           "`--target-fraction` sets other fractions, `--target-loss` gives losses.\n";
  } else {
    out << "- Targets: given by `--target-loss`.\n";
  }
  out << "- Time to target: simulated time at which the validation loss first reaches the target, interpolated "
         "linearly between evaluations; ± over seeds, then (×) the arm's mean over the baseline's with Welch's p "
         "for the two arms' times (the ratio in bold where p < "
      << kSignificance
      << ": beyond the seeds' noise; no p with 1 seed a side). \"never\": no seed reaches it; \"k of n seeds\": "
         "only some do (no mean).";
  bool any_smoothed = false;
  for (const ReportRow& row : r.rows) any_smoothed = any_smoothed || !row.target_from_validation;
  if (any_smoothed)
    out << " ¹ Fewer than two validation losses: the training loss, a trailing mean of " << kTrainLossSmoothingSteps
        << " steps, is used instead.";
  out << "\n";
  if (r.baseline)
    out << "- Baseline: `" << escape_cell(r.arms[*r.baseline].label) << "`, "
        << (r.baseline_given ? "given by `--baseline`." : "the uncompressed run with the highest bandwidth.") << "\n";
  else
    out << "- Baseline: none (no uncompressed run among these; `--baseline RUN_DIR` names one).\n";
  out << "- Δ final val loss: the arm's mean minus the baseline's, ± the half-width of the 95 % interval of the "
         "difference, and the two-sided p of Welch's t-test (unequal variances): **beyond noise** where p < "
      << kSignificance << ", within noise otherwise; untested where either side has 1 seed.\n";
  out << "- Bandwidth: the scenario's `network.bandwidth`, or the slowest link of a clusters or explicit network. "
         "Tokens/s and times are simulated (the modelled network), bytes are per rank (the busiest) per step, "
         "by what they carry: K/V (and their gradients), pipeline boundaries, weights (gradient or pseudo-gradient "
         "syncs), other (the loss, the codecs' own).\n"
         "- K/V bytes saved: over the whole run, measured from the messages sent; uncompressed warm-up steps "
         "(MoS) count, so it is below the codec's own ratio. For a pipeline run, the stage boundaries' messages "
         "(both ways) instead. MoS rows name the rank kept per head.\n";
  static const char* kMarks[] = {"†", "‡", "§", "¶"};
  for (const ReportRow& row : r.rows) {
    if (!row.projection || marks.count(row.projection->scenario)) continue;
    const size_t n = marks.size();
    const std::string& name = row.projection->scenario;
    marks[name] = n < 4 ? kMarks[n] : "†" + std::to_string(n + 1);
    out << "- " << marks[name] << " time per step projected to " << name
        << ": the loss curve is the run's own, each step's simulated time is `estimate`'s for " << name
        << (row.projection->description.empty() ? "" : " (" + escape_cell(row.projection->description) + ")")
        << ". Bytes and K/V compression are the run's own"
        << (row.projection->bytes_per_step ? "; at " + name + "'s scale a rank sends " +
                                                 units::format_bytes(*row.projection->bytes_per_step) + " per step"
                                           : "")
        << ".\n";
  }
  for (const std::string& note : r.notes) out << "- Note: " << note << "\n";
}

}  // namespace

std::string interval_cell(const std::optional<MeanInterval>& m, int digits) {
  if (!m) return kNone;
  std::string text = format_number(m->mean, digits);
  if (m->half_width) text += " ± " + format_number(shown_half_width(*m), 2);
  return text;
}

std::string difference_text(double difference, const std::optional<WelchTest>& test, int decimals) {
  char sign[64];
  std::snprintf(sign, sizeof sign, "%+.*f", decimals, difference);
  if (!test) return std::string(sign) + " (1 seed a side: untested)";
  return std::string(sign) + " ± " + format_number(test->half_width, 2) + ", p " + format_number(test->p_value, 2) +
         (test->p_value < kSignificance ? ": **beyond noise**" : ": within noise");
}

std::string report_markdown(const Report& r) {
  std::ostringstream out;
  out << "# lowband report: " << r.rows.size() << (r.rows.size() == 1 ? " run" : " runs") << ", " << r.arms.size()
      << (r.arms.size() == 1 ? " arm" : " arms") << "\n\n";
  std::map<std::string, std::string> marks;  // projection scenario -> "†", "‡", ...
  write_notes(out, r, marks);
  bool any_lost = false;  // a column only where some run had a changing network
  for (const ReportRow& row : r.rows) any_lost = any_lost || row.lost_seconds.has_value();
  if (any_lost)
    out << "- Time lost: over the whole run, simulated time beyond the same steps on the nominal network "
           "(`network.dynamics`: links and nodes down, slower, or with less bandwidth; under `network.restart` "
           "also the restarts from a checkpoint); — on a constant network.\n";
  out << "\n| run | seeds | bandwidth | compression | tokens/s |";
  for (const Target& t : r.targets) out << " " << target_header(t) << " |";
  out << " final val loss | Δ final val loss vs baseline | val perplexity | bytes sent per step | K/V bytes saved "
         "(measured) |"
      << (any_lost ? " time lost |" : "") << "\n|---|---|---|---|---:|";
  for (size_t t = 0; t < r.targets.size(); ++t) out << "---:|";
  out << "---:|---|---:|---:|---:|" << (any_lost ? "---:|" : "") << "\n";
  for (size_t a = 0; a < r.arms.size(); ++a) {
    const ArmRow& arm = r.arms[a];
    const ReportRow& first = r.rows[arm.rows.front()];
    std::string compression = first.compression;
    if (!first.kept_ranks.empty()) compression += " (" + first.kept_ranks + ")";
    out << "| " << run_cell(r, arm, marks) << " | " << seeds_cell(arm) << " | "
        << units::format_bandwidth(first.bandwidth_bytes_per_s) << " | " << escape_cell(compression) << " | "
        << interval_cell(arm.tokens_per_s, 4) << " |";
    for (const TargetTime& t : arm.targets) out << " " << time_cell(t, arm.rows.size()) << " |";
    out << " " << interval_cell(arm.final_val_loss, 5) << " | " << difference_cell(r, a) << " | "
        << (arm.final_val_loss ? format_number(std::exp(arm.final_val_loss->mean), 4) : kNone) << " | "
        << bytes_cell(r, arm) << " | " << compression_cell(r, arm) << " |";
    if (any_lost) {
      const auto lost = mean_of_runs(r, arm, [](const ReportRow& row) { return row.lost_seconds; });
      // Below a microsecond over a run it is the replays' rounding (either sign), not time lost.
      out << " " << (lost ? format_time(std::abs(*lost) < 1e-6 ? 0.0 : *lost) : kNone) << " |";
    }
    out << "\n";
  }
  if (r.answers) out << answer_markdown(r, *r.answers);
  bool any_seeds = false;
  for (const ArmRow& arm : r.arms) any_seeds = any_seeds || arm.rows.size() > 1;
  if (!any_seeds) return out.str();
  out << "\nFinal validation loss by seed:\n\n";
  for (const ArmRow& arm : r.arms) {
    if (arm.rows.size() < 2) continue;
    out << "- `" << escape_cell(arm.label) << "`:";
    for (size_t k = 0; k < arm.rows.size(); ++k) {
      const auto& loss = r.rows[arm.rows[k]].final_val_loss;
      out << (k ? "," : "") << " " << (loss ? format_number(*loss, 5) : kNone) << " (seed " << arm.seeds[k] << ")";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace lowband::report
