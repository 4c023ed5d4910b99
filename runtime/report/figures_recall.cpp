// The keyed-recall task's figures (figures.h): remote-answer accuracy over
// training per arm with its band over seeds, and each arm's accuracy against the
// K/V bytes it sent — the bytes-versus-accuracy curve of a codec sweep.
#include <algorithm>
#include <map>
#include <string>

#include "runtime/report/figures.h"
#include "runtime/report/run_metrics.h"
#include "runtime/report/report_answers.h"
#include "runtime/report/seed_groups.h"
#include "runtime/report/stats.h"

namespace lowband::report {
namespace {

// What joins arms into one curve of the bytes figure: the K/V codec's settings
// other than its size (ranks, ratios, top-k fraction, bits). Arms that differ only
// in size lie on one curve; an ablation (another rotation, no warm start, the
// final layer uncompressed) is a curve of its own.
std::string codec_family(const LoadedRun& run) {
  const nlohmann::json& s = run.scenario;
  if (!s.contains("compression") || !s["compression"].is_object()) return "none";
  nlohmann::json c = s["compression"];
  for (const char* size : {"k_ratio", "v_ratio", "k_rank", "v_rank", "topk_fraction", "bits", "ratio"}) c.erase(size);
  return c.dump();
}

// K/V and dK/dV bytes one rank (the busiest) sent over the whole run.
std::optional<double> kv_bytes_per_rank_per_run(const LoadedRun& run) {
  const auto kv = summary_number(run, "bytes_sent_per_rank_per_step.kv");
  const auto dkv = summary_number(run, "bytes_sent_per_rank_per_step.dkv");
  const auto steps = summary_number(run, "steps_done");
  if (!kv || !steps) return std::nullopt;
  return (*kv + dkv.value_or(0)) * *steps;
}

// An accuracy's interval, cut to [0, 1] (a t-interval of few seeds reaches past it).
std::pair<double, double> accuracy_band(const MeanInterval& m) {
  const double half = m.half_width.value_or(0);
  return {std::max(0.0, m.mean - half), std::min(1.0, m.mean + half)};
}

Figure accuracy_vs_step(const std::vector<LoadedRun>& runs, const std::vector<SeedGroup>& groups) {
  Figure f;
  f.name = "remote_accuracy_vs_step_seeds";
  f.title = "Keyed recall: accuracy on answers only remote K/V carry (mean over seeds, 95 % Student-t band; chance 0.1)";
  f.x_label = "training step";
  f.y_label = "validation accuracy on remote answers";
  f.x_from_zero = true;
  f.y_is_fraction = true;
  for (const SeedGroup& g : groups) {
    std::map<int, std::vector<double>> at_step;
    for (size_t i : g.runs)
      for (const AnswerPoint& p : runs[i].answers) at_step[p.step].push_back(p.remote_accuracy);
    const std::string seeds = std::to_string(g.runs.size()) + (g.runs.size() == 1 ? " seed" : " seeds");
    Series s{g.label + " (" + seeds + ")", {}, Series::Style::linespoints, int(f.series.size())};
    for (const auto& [step, values] : at_step) {
      if (values.size() < g.runs.size()) continue;  // not every seed evaluated here
      const MeanInterval m = mean_interval(values);
      s.points.emplace_back(step, m.mean);
      if (m.half_width) s.y_band.push_back(accuracy_band(m));
    }
    if (s.y_band.size() != s.points.size()) s.y_band.clear();  // one seed: no band
    if (!s.points.empty()) f.series.push_back(std::move(s));
  }
  return f;
}

Figure accuracy_vs_bytes(const std::vector<LoadedRun>& runs, const std::vector<SeedGroup>& groups) {
  Figure f;
  f.name = "remote_accuracy_vs_kv_bytes";
  f.title = "Keyed recall: remote-answer accuracy (area under its curve) vs K/V bytes sent per rank over the run";
  f.x_label = "K/V and dK/dV bytes sent per rank over the run (MiB, log scale)";
  f.log_x = true;
  f.y_label = "remote accuracy: area (its mean over the run)";
  f.y_is_fraction = true;
  struct Point {
    double x, y, low, high;
    bool operator<(const Point& o) const { return x < o.x; }
  };
  std::map<std::string, std::vector<Point>> by_family;  // one curve per codec family through its arms
  std::map<std::string, std::string> titles;
  for (const SeedGroup& g : groups) {
    std::vector<double> bytes, areas;
    for (size_t i : g.runs) {
      const auto b = kv_bytes_per_rank_per_run(runs[i]);
      const auto a = answer_run(runs[i], kDefaultAnswerThreshold).area;
      if (b && a) bytes.push_back(*b), areas.push_back(*a);
    }
    if (bytes.empty()) continue;  // not a recall run
    if (bytes.size() < g.runs.size()) {
      f.notes.push_back(g.label + ": left out (a seed without K/V bytes or recall evaluations)");
      continue;
    }
    const MeanInterval area = mean_interval(areas);
    const double mib = mean_interval(bytes).mean / (1024.0 * 1024.0);
    if (!(mib > 0)) {  // nothing sent (drop): off a log axis
      f.notes.push_back(g.label + ": no K/V bytes, remote accuracy " + format_number(area.mean, 3) +
                        " (not on the log axis)");
      continue;
    }
    const std::string family = codec_family(runs[g.runs.front()]);
    const auto [low, high] = accuracy_band(area);
    by_family[family].push_back({mib, area.mean, low, high});
    titles[family] += (titles[family].empty() ? "" : ", ") + g.label;
  }
  for (auto& [family, points] : by_family) {
    std::stable_sort(points.begin(), points.end());
    Series s{titles[family], {}, Series::Style::error_lines, int(f.series.size())};
    for (const Point& p : points) s.points.emplace_back(p.x, p.y), s.y_band.emplace_back(p.low, p.high);
    f.series.push_back(std::move(s));
  }
  return f;
}

}  // namespace

std::vector<Figure> recall_figures(const std::vector<LoadedRun>& runs) {
  bool any = false;
  for (const LoadedRun& run : runs) any = any || !run.answers.empty();
  if (!any) return {};
  const std::vector<SeedGroup> groups = group_by_seed(runs);
  std::vector<Figure> out;
  for (Figure f : {accuracy_vs_step(runs, groups), accuracy_vs_bytes(runs, groups)})
    if (!f.series.empty()) out.push_back(std::move(f));
  return out;
}

}  // namespace lowband::report
