#include "runtime/report/report_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/error.h"
#include "runtime/report/run_metrics.h"
#include "runtime/report/seed_groups.h"

namespace lowband::report {
namespace {

// What a rank sends per step, grouped by what it carries (the summary's kinds).
std::vector<std::pair<std::string, double>> bytes_by_group(const LoadedRun& run) {
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

// "K rank 3 / V rank 6 of 128; 3 of 4 layers" from summary.json's codec_ranks, else
// "K rank 3 / V rank 6 of 128" from the codec's description ("mos (K rank 3 before RoPE, V rank 6 of 128; ...)"); "" for other codecs.
std::string kept_ranks(const LoadedRun& run) {
  const nlohmann::json& s = run.summary;
  if (s.contains("codec_ranks") && s["codec_ranks"].is_object()) {
    const nlohmann::json& r = s["codec_ranks"];
    if (r.contains("k") && r.contains("v") && r.contains("head_dim")) {
      std::string text = "K rank " + r["k"].dump() + " / V rank " + r["v"].dump() + " of " + r["head_dim"].dump();
      if (r.contains("compressed_layers") && r.contains("layers"))
        text += "; " + r["compressed_layers"].dump() + " of " + r["layers"].dump() + " layers";
      return text;
    }
  }
  if (!s.contains("codec") || !s["codec"].is_string()) return "";
  const std::string codec = s["codec"].get<std::string>();
  int k = 0, v = 0, d = 0;
  const size_t at_k = codec.find("K rank "), at_v = codec.find("V rank ");
  if (codec.rfind("mos", 0) != 0 || at_k == std::string::npos || at_v == std::string::npos) return "";
  if (std::sscanf(codec.c_str() + at_k, "K rank %d", &k) != 1 || std::sscanf(codec.c_str() + at_v, "V rank %d of %d", &v, &d) != 2)
    return "";
  return "K rank " + std::to_string(k) + " / V rank " + std::to_string(v) + " of " + std::to_string(d);
}

ReportRow make_row(const LoadedRun& run, const std::vector<Target>& targets) {
  ReportRow row;
  row.label = run.label;
  row.dir = run.dir;
  row.compression = compression_label(run);
  row.bandwidth_bytes_per_s = run_bandwidth_bytes_per_s(run);
  row.tokens_per_s = summary_number(run, "sim_tokens_per_s");
  const TargetCurve curve = target_curve(run);
  row.target_from_validation = curve.validation;
  for (const Target& target : targets) row.time_to_target_seconds.push_back(time_to_target_seconds(curve, target.loss));
  row.final_val_loss = summary_number(run, "final_val_loss");
  row.bytes_per_step = summary_number(run, "bytes_sent_per_rank_per_step.total");
  row.bytes_per_step_by_group = bytes_by_group(run);
  // Context-parallel runs measure their K/V messages, pipeline runs their boundaries.
  // Which compressed traffic the run measured (trainer.h: CompressedTraffic::name).
  const char* traffic = run.summary.contains("exchange_bytes_ratio") ? "exchange"
                        : run.summary.contains("boundary_bytes_ratio") ? "boundary" : "kv";
  row.kv_bytes_saved_fraction = summary_number(run, std::string(traffic) + "_bytes_saved_fraction");
  row.kv_bytes_ratio = summary_number(run, std::string(traffic) + "_bytes_ratio");
  row.kept_ranks = kept_ranks(run);
  row.projection = time_projection(run);
  row.diverged = run.summary.contains("diverged") && run.summary["diverged"].is_boolean() &&
                 run.summary["diverged"].get<bool>();
  row.steps_done = summary_number(run, "steps_done");
  row.steps_planned = summary_number(run, "steps_planned");
  row.lost_seconds = summary_number(run, "sim_lost_seconds");
  return row;
}

std::vector<Target> targets_from_fractions(const std::vector<LoadedRun>& runs, const SeedGroup& reference,
                                           const std::vector<double>& fractions, std::vector<std::string>& notes) {
  std::vector<double> first, last;
  for (size_t i : reference.runs) {
    const TargetCurve curve = target_curve(runs[i]);
    if (curve.points.empty()) continue;
    first.push_back(curve.points.front().loss);
    last.push_back(curve.points.back().loss);
  }
  if (first.empty())
    throw InputError("--target-fraction", "the reference arm " + reference.label +
                                              " has no finite loss to take fractions of; give --target-loss");
  const double from = mean_interval(first).mean, to = mean_interval(last).mean;
  if (!(from > to))
    notes.push_back("the reference arm's loss did not fall (" + format_number(from, 5) + " to " + format_number(to, 5) +
                    "): every target is at or above its first loss");
  std::vector<Target> targets;
  for (double f : fractions) targets.push_back({from - f * (from - to), f});
  return targets;
}

}  // namespace

Report build_report(LoadedRuns loaded, const ReportRequest& request) {
  Report report;
  report.notes = loaded.notes;
  std::optional<size_t> baseline_run;
  if (!request.baseline_dir.empty()) {
    report.baseline_given = true;
    baseline_run = find_run(loaded.runs, request.baseline_dir);
    if (!baseline_run) {
      try {
        loaded.runs.push_back(load_run_dir(request.baseline_dir));
      } catch (const InputError& e) {
        throw InputError("--baseline", e.what());
      }
      assign_labels(loaded.runs);
      baseline_run = loaded.runs.size() - 1;
    }
  } else {
    baseline_run = default_baseline(loaded.runs);
  }
  const std::vector<SeedGroup> groups = group_by_seed(loaded.runs);
  for (size_t g = 0; g < groups.size(); ++g)
    if (baseline_run && std::count(groups[g].runs.begin(), groups[g].runs.end(), *baseline_run)) report.baseline = g;

  if (!request.target_losses.empty()) {
    for (double loss : request.target_losses) report.targets.push_back({loss, std::nullopt});
  } else {
    const SeedGroup& reference = groups[report.baseline.value_or(0)];
    report.target_reference = reference.label;
    report.targets = targets_from_fractions(loaded.runs, reference, request.target_fractions, report.notes);
  }
  for (const LoadedRun& run : loaded.runs) report.rows.push_back(make_row(run, report.targets));

  for (const SeedGroup& g : groups) {
    ArmRow arm;
    arm.label = g.label;
    arm.rows = g.runs;
    arm.seeds = g.seeds;
    arm.tokens_per_s = arm_value(report.rows, g.runs, [](const ReportRow& r) { return r.tokens_per_s; });
    arm.final_val_loss = arm_value(report.rows, g.runs, [](const ReportRow& r) { return r.final_val_loss; });
    for (size_t t = 0; t < report.targets.size(); ++t) {
      TargetTime time;
      const auto get = [t](const ReportRow& r) { return r.time_to_target_seconds[t]; };
      time.reached = int(values_of(report.rows, g.runs, get).size());
      time.seconds = arm_value(report.rows, g.runs, get);
      arm.targets.push_back(time);
    }
    report.arms.push_back(std::move(arm));
  }
  if (report.baseline) {
    const ArmRow& base = report.arms[*report.baseline];
    const auto final_loss = [](const ReportRow& r) { return r.final_val_loss; };
    const std::vector<double> base_losses = values_of(report.rows, base.rows, final_loss);
    for (ArmRow& arm : report.arms) {
      for (size_t t = 0; t < report.targets.size(); ++t) {
        const auto& mine = arm.targets[t].seconds;
        const auto& theirs = base.targets[t].seconds;
        if (mine && theirs && theirs->mean > 0) arm.targets[t].vs_baseline = mine->mean / theirs->mean;
        if (mine && theirs && &arm != &base) {
          const auto time = [t](const ReportRow& r) { return r.time_to_target_seconds[t]; };
          arm.targets[t].vs_baseline_test =
              welch_t_test(values_of(report.rows, arm.rows, time), values_of(report.rows, base.rows, time));
        }
      }
      if (&arm == &base || !arm.final_val_loss || !base.final_val_loss) continue;
      arm.vs_baseline_difference = arm.final_val_loss->mean - base.final_val_loss->mean;
      arm.vs_baseline_test = welch_t_test(values_of(report.rows, arm.rows, final_loss), base_losses);
    }
  }
  report.answers = answer_table(loaded.runs, report, request.answer_threshold);
  return report;
}

}  // namespace lowband::report
