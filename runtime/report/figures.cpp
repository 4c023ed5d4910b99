#include "runtime/report/figures.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "runtime/report/run_metrics.h"
#include "runtime/report/seed_groups.h"
#include "runtime/report/stats.h"
#include "runtime/scenario/load.h"
#include "sim/dynamics.h"

namespace lowband::report {
namespace {

bool all_positive_and_spread(const std::vector<Series>& series, double spread) {
  double lo = INFINITY, hi = 0;
  for (const Series& s : series)
    for (const auto& [x, y] : s.points) {
      if (y <= 0) return false;
      lo = std::min(lo, y);
      hi = std::max(hi, y);
    }
  return hi > 0 && hi / lo > spread;
}

// "time per step projected to X" for the title, naming the runs when not all are projected.
std::string projection_title(const std::vector<LoadedRun>& runs) {
  std::map<std::string, std::vector<std::string>> by_scenario;
  for (const LoadedRun& run : runs)
    if (const auto p = time_projection(run)) by_scenario[p->scenario].push_back(run.label);
  std::string text;
  for (const auto& [scenario, labels] : by_scenario) {
    text += "\ntime per step projected to " + scenario;
    if (labels.size() == runs.size()) continue;
    text += " (";
    for (size_t i = 0; i < labels.size(); ++i) text += (i ? ", " : "") + labels[i];
    text += ")";
  }
  return text;
}

// A train and a validation series per run (one colour), at x_of(row); rows
// without an x are left out. Without `with_train`, a run's training series only
// where it has no validation series.
template <typename XOf>
void add_loss_series(Figure& f, const std::vector<LoadedRun>& runs, XOf x_of, bool with_train) {
  for (size_t i = 0; i < runs.size(); ++i) {
    Series train{runs[i].label + " train", {}, Series::Style::lines, int(i)};
    Series val{runs[i].label + " validation", {}, Series::Style::linespoints, int(i)};
    for (const CurveRow& row : runs[i].curve) {
      const std::optional<double> x = x_of(row);
      if (!x) continue;
      if (std::isfinite(row.train_loss)) train.points.emplace_back(*x, row.train_loss);
      if (row.val_loss && std::isfinite(*row.val_loss)) val.points.emplace_back(*x, *row.val_loss);
    }
    if (!train.points.empty() && (with_train || val.points.empty())) f.series.push_back(train);
    if (!val.points.empty()) f.series.push_back(val);
  }
  if (!with_train)
    f.notes.push_back(std::to_string(runs.size()) + " runs: validation losses only (`lowband plot --curves both` "
                      "draws the training losses too)");
}

bool draws_training_curves(LossCurves curves, size_t runs) {
  return curves == LossCurves::both || (curves == LossCurves::automatic && runs <= kMostRunsWithTrainingCurves);
}

// Each run's outages as bands in `unit`, in the run's colour; runs whose
// scenario.json does not parse get a note instead.
void add_outage_bands(Figure& f, const std::vector<LoadedRun>& runs, const TimeUnit& unit) {
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<std::pair<double, double>> intervals;
    try {
      intervals = outage_intervals(runs[i]);
    } catch (const std::exception& e) {
      f.notes.push_back(runs[i].label + ": outages not shaded, scenario.json does not load: " + e.what());
      continue;
    }
    for (const auto& [from, to] : intervals) f.bands.push_back({from / unit.seconds, to / unit.seconds, int(i)});
  }
  if (!f.bands.empty()) {
    f.bands_title = kOutageBandsTitle;
    f.notes.push_back(std::string(kOutageBandsTitle) + ", in the run's colour");
  }
}

Figure loss_figure(const std::vector<LoadedRun>& runs, bool against_time, bool with_train) {
  Figure f;
  double largest_seconds = 0;
  for (const LoadedRun& run : runs)
    for (const CurveRow& row : run.curve) largest_seconds = std::max(largest_seconds, row.sim_seconds);
  const TimeUnit unit = time_unit_for(largest_seconds);
  f.name = against_time ? "loss_vs_time" : "loss_vs_step";
  f.title = against_time ? "Loss vs simulated wall-clock time" + projection_title(runs) : "Loss vs step";
  f.x_label = against_time ? "simulated wall-clock time (" + unit.name + ")" : "step";
  f.y_label = "loss (nats/token)";
  f.x_from_zero = against_time;
  add_loss_series(f, runs, [&](const CurveRow& row) -> std::optional<double> {
    return against_time ? row.sim_seconds / unit.seconds : row.step;
  }, with_train);
  for (const LoadedRun& run : runs)
    if (std::none_of(run.curve.begin(), run.curve.end(), [](const CurveRow& r) { return std::isfinite(r.train_loss); }))
      f.notes.push_back(run.label + ": no finite training loss");
  if (against_time) add_outage_bands(f, runs, unit);
  return f;
}

// Loss against the bytes every rank of the run has sent so far: compression
// methods compared at equal traffic. Runs without the byte counts are left out.
Figure loss_bytes_figure(const std::vector<LoadedRun>& runs, bool with_train) {
  Figure f;
  double largest = 0;
  for (const LoadedRun& run : runs)
    for (const CurveRow& row : run.curve) largest = std::max(largest, row.cumulative_bytes_all_ranks.value_or(0.0));
  // Not a structured binding: clang does not let the lambda below capture one.
  const double unit_bytes = largest >= 1e9 ? 1e9 : largest >= 1e6 ? 1e6 : 1e3;
  const char* unit = largest >= 1e9 ? "GB" : largest >= 1e6 ? "MB" : "kB";
  f.name = "loss_vs_bytes";
  f.title = "Loss vs bytes sent (all ranks, cumulative)";
  f.x_label = std::string("bytes sent by all ranks (") + unit + ")";
  f.y_label = "loss (nats/token)";
  f.x_from_zero = true;
  add_loss_series(f, runs, [&](const CurveRow& row) -> std::optional<double> {
    if (!row.cumulative_bytes_all_ranks) return std::nullopt;
    return *row.cumulative_bytes_all_ranks / unit_bytes;
  }, with_train);
  for (const LoadedRun& run : runs)
    if (run.curve.empty() || !run.curve.back().cumulative_bytes_all_ranks)
      f.notes.push_back(run.label + ": no byte counts in steps.jsonl (written by an older lowband)");
  // Runs whose totals differ tenfold (compressed beside dense) stay readable on a log axis.
  double least_final = INFINITY;
  for (const Series& s : f.series) least_final = std::min(least_final, s.points.back().first);
  if (!f.series.empty() && least_final > 0 && largest / unit_bytes > 10 * least_final) {
    f.log_x = true;
    f.x_from_zero = false;
    f.x_label += ", log scale";
  }
  return f;
}

// Validation loss against simulated time on a log axis: runs whose step times
// differ by orders of magnitude (100 Gbps vs 300 Mbps) stay readable side by side.
Figure val_loss_log_time_figure(const std::vector<LoadedRun>& runs) {
  Figure f = loss_figure(runs, true, true);  // its training series are dropped below
  f.name = "val_loss_vs_time_log";
  f.title = "Validation loss vs simulated wall-clock time (log scale)" + projection_title(runs);
  f.x_label += ", log scale";
  f.log_x = true;
  f.x_from_zero = false;
  std::vector<Series> kept;
  for (Series& s : f.series) {
    if (s.style != Series::Style::linespoints) continue;  // the validation series
    s.points.erase(std::remove_if(s.points.begin(), s.points.end(), [](const auto& p) { return p.first <= 0; }),
                   s.points.end());
    if (!s.points.empty()) kept.push_back(s);
  }
  f.series = kept;
  // A log axis has no 0: bands start at the first time drawn, those before it go.
  double first_x = INFINITY;
  for (const Series& s : f.series) first_x = std::min(first_x, s.points.front().first);
  std::vector<Band> bands;
  for (Band b : f.bands) {
    b.x_from = std::max(b.x_from, first_x);
    if (b.x_to > b.x_from) bands.push_back(b);
  }
  f.bands = bands;
  if (f.bands.empty()) {
    f.bands_title.clear();
    f.notes.erase(std::remove_if(f.notes.begin(), f.notes.end(),
                                 [](const std::string& n) { return n.rfind(kOutageBandsTitle, 0) == 0; }),
                  f.notes.end());
  }
  return f;
}

// One series per compression label, points sorted by bandwidth; `value` gives y in
// the figure's unit or nullopt to leave the run out (with `why`).
template <typename Value>
std::vector<Series> by_compression(const std::vector<LoadedRun>& runs, Value value, const std::string& why,
                                   std::vector<std::string>& notes) {
  std::vector<Series> series;
  std::map<std::string, size_t> index;
  for (const LoadedRun& run : runs) {
    const std::string label = compression_label(run);
    if (!index.count(label)) {
      index[label] = series.size();
      series.push_back({label, {}, Series::Style::linespoints, int(series.size())});
    }
    const std::optional<double> y = value(run);
    if (!y) {
      notes.push_back(run.label + ": " + why);
      continue;
    }
    series[index[label]].points.emplace_back(8 * run_bandwidth_bytes_per_s(run), *y);
  }
  std::vector<Series> kept;
  for (Series& s : series) {
    std::sort(s.points.begin(), s.points.end());
    if (!s.points.empty()) kept.push_back(std::move(s));
  }
  return kept;
}

Figure tokens_figure(const std::vector<LoadedRun>& runs) {
  Figure f;
  f.name = "tokens_per_s_vs_bandwidth";
  f.title = "Simulated training throughput vs bandwidth" + projection_title(runs);
  f.x_label = "bandwidth (bits/s, log scale)";
  f.y_label = "simulated tokens/s";
  f.log_x = f.x_is_bandwidth = true;
  f.series = by_compression(
      runs, [](const LoadedRun& run) { return summary_number(run, "sim_tokens_per_s"); },
      "no sim_tokens_per_s in summary.json", f.notes);
  f.log_y = all_positive_and_spread(f.series, 30);
  if (f.log_y) f.y_label += " (log scale)";
  return f;
}

Figure time_to_target_figure(const std::vector<LoadedRun>& runs, double target_loss, const std::string& origin) {
  double largest_seconds = 0;
  for (const LoadedRun& run : runs)
    if (const auto t = time_to_target_seconds(target_curve(run), target_loss))
      largest_seconds = std::max(largest_seconds, *t);
  const TimeUnit unit = time_unit_for(largest_seconds);
  Figure f;
  f.name = "time_to_target_vs_bandwidth";
  f.title = "Simulated time to loss " + format_number(target_loss, 4) + " (" + origin + ") vs bandwidth" +
            projection_title(runs);
  f.x_label = "bandwidth (bits/s, log scale)";
  f.y_label = "simulated time to target loss (" + unit.name + ")";
  f.log_x = f.x_is_bandwidth = true;
  bool smoothed = false;
  f.series = by_compression(
      runs,
      [&](const LoadedRun& run) -> std::optional<double> {
        const TargetCurve curve = target_curve(run);
        smoothed = smoothed || !curve.validation;
        const auto t = time_to_target_seconds(curve, target_loss);
        return t ? std::optional<double>(*t / unit.seconds) : std::nullopt;
      },
      "does not reach loss " + format_number(target_loss, 4), f.notes);
  if (smoothed)
    f.notes.push_back("runs with fewer than two validation losses use the training loss, a trailing mean of " +
                      std::to_string(kTrainLossSmoothingSteps) + " steps");
  f.log_y = all_positive_and_spread(f.series, 30);
  if (f.log_y) f.y_label += ", log scale";
  return f;
}

// Per arm of two or more seeds, the mean validation curve over its seeds at the
// evaluations every seed made, in a band of the 95 % t-interval.
Figure seeds_figure(const std::vector<LoadedRun>& runs) {
  Figure f;
  f.name = "val_loss_vs_time_seeds";
  f.title = "Validation loss vs simulated wall-clock time: mean over seeds, 95 % Student-t band" + projection_title(runs);
  f.y_label = "validation loss (nats/token)";
  f.x_from_zero = true;
  double largest_seconds = 0;
  for (const LoadedRun& run : runs)
    for (const CurveRow& row : run.curve) largest_seconds = std::max(largest_seconds, row.sim_seconds);
  const TimeUnit unit = time_unit_for(largest_seconds);
  f.x_label = "simulated wall-clock time (" + unit.name + ")";
  for (const SeedGroup& g : group_by_seed(runs)) {
    if (g.runs.size() < 2) continue;
    std::map<int, std::vector<std::pair<double, double>>> at_step;  // step -> each seed's (time, loss)
    for (size_t i : g.runs)
      for (const CurveRow& row : runs[i].curve)
        if (row.val_loss && std::isfinite(*row.val_loss)) at_step[row.step].emplace_back(row.sim_seconds, *row.val_loss);
    Series s{g.label + " (" + std::to_string(g.runs.size()) + " seeds)", {}, Series::Style::linespoints,
             int(f.series.size())};
    for (const auto& [step, values] : at_step) {
      if (values.size() < g.runs.size()) continue;  // not every seed evaluated here
      std::vector<double> times, losses;
      for (const auto& [t, loss] : values) times.push_back(t), losses.push_back(loss);
      const MeanInterval loss = mean_interval(losses);
      s.points.emplace_back(mean_interval(times).mean / unit.seconds, loss.mean);
      s.y_band.emplace_back(loss.mean - *loss.half_width, loss.mean + *loss.half_width);
    }
    if (!s.points.empty()) f.series.push_back(std::move(s));
  }
  return f;
}

}  // namespace

std::vector<std::pair<double, double>> outage_intervals(const LoadedRun& run) {
  const nlohmann::json& s = run.scenario;
  if (!s.is_object() || !s.contains("network") || !s["network"].is_object()) return {};
  const nlohmann::json& network = s["network"];
  if (!network.contains("dynamics") || !network["dynamics"].is_array() || network["dynamics"].empty()) return {};
  if (time_projection(run) || (s.contains("projection") && s["projection"].is_object() &&
                               s["projection"].contains("scenario")))
    return {};  // timed on the projected scenario: the run's dynamics were not replayed
  double end = 0;
  if (const auto total = summary_number(run, "sim_total_seconds")) end = *total;
  else if (!run.curve.empty()) end = run.curve.back().sim_seconds;
  if (!(end > 0)) return {};
  const Scenario scenario = parse_scenario(s, run.dir + "/scenario.json");
  std::vector<std::pair<double, double>> down;
  for (const sim::NetworkDynamic& d : scenario.network.dynamics) {
    if (d.quantity != sim::DynamicQuantity::state) continue;
    sim::Trace trace(d.trace);
    for (double t = 0; t < end;) {
      const double next = std::min(trace.next_change_after(t), end);
      if (trace.value_at(t) == 0) down.emplace_back(t, next);
      if (!(next > t)) break;  // a trace that does not move on (never expected)
      t = next;
    }
  }
  std::sort(down.begin(), down.end());
  std::vector<std::pair<double, double>> merged;
  for (const auto& interval : down) {
    if (!merged.empty() && interval.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, interval.second);
    else
      merged.push_back(interval);
  }
  return merged;
}

std::vector<Figure> build_figures(const std::vector<LoadedRun>& runs, double target_loss,
                                  const std::string& target_origin, LossCurves curves) {
  const bool with_train = draws_training_curves(curves, runs.size());
  std::vector<Figure> figures = {loss_figure(runs, true, with_train),
                                 loss_figure(runs, false, with_train),
                                 val_loss_log_time_figure(runs),
                                 loss_bytes_figure(runs, with_train),
                                 tokens_figure(runs),
                                 time_to_target_figure(runs, target_loss, target_origin)};
  Figure seeds = seeds_figure(runs);  // only where some arm has several seeds
  if (!seeds.series.empty()) figures.push_back(std::move(seeds));
  for (Figure& f : recall_figures(runs)) figures.push_back(std::move(f));
  return figures;
}

}  // namespace lowband::report
