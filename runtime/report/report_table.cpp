#include "runtime/report/report_table.h"

#include <cmath>
#include <map>
#include <sstream>

#include "common/error.h"
#include "runtime/report/run_metrics.h"
#include "runtime/scenario/units.h"

namespace lowband::report {
namespace {

const char* kNone = "—";

std::string cell(const std::optional<double>& x, int digits) { return x ? format_number(*x, digits) : kNone; }

std::string escape_cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

// What a rank sends per step, grouped by what it carries (the summary's kinds).
std::vector<std::pair<std::string, double>> bytes_by_group(const RunData& run) {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> groups = {
      {"K/V", {"kv", "dkv"}}, {"boundaries", {"act", "act_grad"}}, {"weights", {"grad_sync", "pseudo_grad"}}};
  const nlohmann::json* kinds = nullptr;
  if (run.summary.contains("bytes_sent_per_rank_per_step") && run.summary["bytes_sent_per_rank_per_step"].is_object())
    kinds = &run.summary["bytes_sent_per_rank_per_step"];
  std::vector<std::pair<std::string, double>> out;
  if (!kinds) return out;
  double grouped = 0, total = 0;
  for (const auto& [name, members] : groups) {
    double bytes = 0;
    for (const std::string& kind : members)
      if (kinds->contains(kind) && (*kinds)[kind].is_number()) bytes += (*kinds)[kind].get<double>();
    if (bytes > 0) out.emplace_back(name, bytes);
    grouped += bytes;
  }
  for (const auto& [kind, value] : kinds->items())
    if (kind != "total" && value.is_number()) total += value.get<double>();
  if (total - grouped > 1e-6 * total) out.emplace_back("other", total - grouped);  // not the sums' rounding
  return out;
}

std::string bytes_cell(const ReportRow& row) {
  if (!row.bytes_per_step) return kNone;
  std::string text = units::format_bytes(*row.bytes_per_step);
  if (row.bytes_per_step_by_group.size() < 2) return text;
  std::string parts;
  for (const auto& [group, bytes] : row.bytes_per_step_by_group)
    parts += (parts.empty() ? "" : ", ") + group + " " + units::format_bytes(bytes);
  return text + " (" + parts + ")";
}

ReportRow make_row(const RunData& run, double target_loss) {
  ReportRow row;
  row.label = run.label;
  row.dir = run.dir;
  row.compression = compression_label(run);
  row.bandwidth_bytes_per_s = run_bandwidth_bytes_per_s(run);
  row.tokens_per_s = summary_number(run, "sim_tokens_per_s");
  const TargetCurve curve = target_curve(run);
  row.target_from_validation = curve.validation;
  row.time_to_target_seconds = time_to_target_seconds(curve, target_loss);
  row.final_val_loss = summary_number(run, "final_val_loss");
  if (row.final_val_loss) row.final_val_perplexity = std::exp(*row.final_val_loss);
  row.bytes_per_step = summary_number(run, "bytes_sent_per_rank_per_step.total");
  row.bytes_per_step_by_group = bytes_by_group(run);
  // Context-parallel runs measure their K/V messages, pipeline runs their boundaries.
  // Which compressed traffic the run measured (trainer.h: CompressedTraffic::name).
  const char* traffic = run.summary.contains("exchange_bytes_ratio") ? "exchange"
                        : run.summary.contains("boundary_bytes_ratio") ? "boundary" : "kv";
  row.kv_bytes_saved_fraction = summary_number(run, std::string(traffic) + "_bytes_saved_fraction");
  row.kv_bytes_ratio = summary_number(run, std::string(traffic) + "_bytes_ratio");
  row.projection = time_projection(run);
  row.diverged = run.summary.contains("diverged") && run.summary["diverged"].is_boolean() &&
                 run.summary["diverged"].get<bool>();
  row.steps_done = summary_number(run, "steps_done");
  row.steps_planned = summary_number(run, "steps_planned");
  row.lost_seconds = summary_number(run, "sim_lost_seconds");
  return row;
}

std::string compression_cell(const ReportRow& row) {
  if (!row.kv_bytes_saved_fraction) return kNone;
  std::string text = format_number(100 * *row.kv_bytes_saved_fraction, 3) + " %";
  if (row.kv_bytes_ratio && *row.kv_bytes_ratio > 0) text += " (" + format_number(1 / *row.kv_bytes_ratio, 3) + "×)";
  return text;
}

std::string run_cell(const ReportRow& row, const std::map<std::string, std::string>& projection_marks) {
  std::string text = "`" + escape_cell(row.label) + "`";
  if (row.projection) text += " " + projection_marks.at(row.projection->scenario);
  if (!row.target_from_validation) text += " ¹";
  if (row.diverged) text += " (diverged)";
  if (row.steps_done && row.steps_planned && *row.steps_done < *row.steps_planned)
    text += " (" + std::to_string(int64_t(*row.steps_done)) + "/" + std::to_string(int64_t(*row.steps_planned)) + " steps)";
  return text;
}

}  // namespace

Report build_report(LoadedRuns loaded, const ReportRequest& request) {
  Report report;
  report.notes = loaded.notes;
  if (!request.baseline_dir.empty()) {
    report.baseline_given = true;
    report.baseline = find_run(loaded.runs, request.baseline_dir);
    if (!report.baseline) {
      try {
        loaded.runs.push_back(load_run_dir(request.baseline_dir));
      } catch (const InputError& e) {
        throw InputError("--baseline", e.what());
      }
      assign_labels(loaded.runs);
      report.baseline = loaded.runs.size() - 1;
    }
  } else {
    report.baseline = default_baseline(loaded.runs);
  }
  report.target_given = request.target_loss.has_value();
  report.target_loss = request.target_loss ? *request.target_loss : default_target_loss(loaded.runs);
  for (const RunData& run : loaded.runs) report.rows.push_back(make_row(run, report.target_loss));
  if (report.baseline) {
    const auto& base = report.rows[*report.baseline].time_to_target_seconds;
    for (ReportRow& row : report.rows)
      if (base && *base > 0 && row.time_to_target_seconds) row.time_to_target_vs_baseline = *row.time_to_target_seconds / *base;
  }
  return report;
}

std::string report_markdown(const Report& r) {
  std::ostringstream out;
  const std::string target = format_number(r.target_loss, 4);
  out << "# lowband report: " << r.rows.size() << (r.rows.size() == 1 ? " run" : " runs") << "\n\n";
  out << "- Target loss: **" << target << "**"
      << (r.target_given ? " (`--target-loss`)."
                         : ", the highest final loss among these runs, so that each reaches it (`--target-loss` sets another).")
      << "\n";
  out << "- Time to target: simulated time at which the validation loss first reaches the target, interpolated "
         "linearly between evaluations.";
  bool any_smoothed = false;
  for (const ReportRow& row : r.rows) any_smoothed = any_smoothed || !row.target_from_validation;
  if (any_smoothed)
    out << " ¹ Fewer than two validation losses: the training loss, a trailing mean of " << kTrainLossSmoothingSteps
        << " steps, is used instead.";
  out << "\n";
  if (r.baseline)
    out << "- Baseline: `" << escape_cell(r.rows[*r.baseline].label) << "` (" << r.rows[*r.baseline].dir << "), "
        << (r.baseline_given ? "given by `--baseline`." : "the uncompressed run with the highest bandwidth.") << "\n";
  else
    out << "- Baseline: none (no uncompressed run among these; `--baseline RUN_DIR` names one).\n";
  out << "- Bandwidth: the scenario's `network.bandwidth`, or the slowest link of a clusters or explicit network. "
         "Tokens/s and times are simulated (the modelled network), bytes are per rank (the busiest) per step, "
         "by what they carry: K/V (and their gradients), pipeline boundaries, weights (gradient or pseudo-gradient "
         "syncs), other (the loss, the codecs' own).\n"
         "- K/V bytes saved: over the whole run, measured from the messages sent; uncompressed warm-up steps "
         "(MoS) count, so it is below the codec's own ratio. For a pipeline run, the stage boundaries' messages "
         "(both ways) instead.\n";
  std::map<std::string, std::string> marks;  // projection scenario -> "†", "‡", ...
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
  bool any_lost = false;  // a column only where some run had a changing network
  for (const ReportRow& row : r.rows) any_lost = any_lost || row.lost_seconds.has_value();
  if (any_lost)
    out << "- Time lost: over the whole run, simulated time beyond the same steps on the nominal network "
           "(`network.dynamics`: links and nodes down, slower, or with less bandwidth; under `network.restart` "
           "also the restarts from a checkpoint); — on a constant network.\n";
  for (const std::string& note : r.notes) out << "- Note: " << note << "\n";
  out << "\n| run | bandwidth | compression | tokens/s | time to loss " << target
      << " | final val loss | val perplexity | bytes sent per step | K/V bytes saved (measured) | time to target ÷ baseline |"
      << (any_lost ? " time lost |" : "") << "\n"
      << "|---|---|---|---:|---:|---:|---:|---:|---:|---:|" << (any_lost ? "---:|" : "") << "\n";
  for (const ReportRow& row : r.rows) {
    out << "| " << run_cell(row, marks) << " | " << units::format_bandwidth(row.bandwidth_bytes_per_s) << " | "
        << escape_cell(row.compression) << " | " << cell(row.tokens_per_s, 4) << " | "
        << (row.time_to_target_seconds ? format_time(*row.time_to_target_seconds) : "not reached") << " | "
        << cell(row.final_val_loss, 5) << " | " << cell(row.final_val_perplexity, 4) << " | "
        << bytes_cell(row) << " | " << compression_cell(row)
        << " | " << cell(row.time_to_target_vs_baseline, 3) << " |";
    if (any_lost) out << " " << (row.lost_seconds ? format_time(*row.lost_seconds) : kNone) << " |";
    out << "\n";
  }
  return out.str();
}

}  // namespace lowband::report
