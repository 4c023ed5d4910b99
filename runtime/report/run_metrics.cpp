#include "runtime/report/run_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "common/error.h"

namespace lowband::report {

TargetCurve target_curve(const LoadedRun& run) {
  TargetCurve curve;
  for (const CurveRow& row : run.curve)
    if (row.val_loss && std::isfinite(*row.val_loss)) curve.points.push_back({row.sim_seconds, *row.val_loss});
  if (curve.points.size() >= 2) return curve;  // one evaluation (at the end) says nothing about when
  curve.points.clear();
  curve.validation = false;
  double window_sum = 0;
  int window = 0;
  for (size_t i = 0; i < run.curve.size(); ++i) {
    window_sum += run.curve[i].train_loss;
    ++window;
    if (window > kTrainLossSmoothingSteps) {
      window_sum -= run.curve[i - kTrainLossSmoothingSteps].train_loss;
      --window;
    }
    const double mean = window_sum / window;
    if (std::isfinite(mean)) curve.points.push_back({run.curve[i].sim_seconds, mean});
  }
  return curve;
}

std::optional<double> time_to_target_seconds(const TargetCurve& curve, double target_loss) {
  for (size_t i = 0; i < curve.points.size(); ++i) {
    const LossPoint& p = curve.points[i];
    if (p.loss > target_loss) continue;
    if (i == 0) return p.sim_seconds;
    const LossPoint& before = curve.points[i - 1];
    const double fraction = (before.loss - target_loss) / (before.loss - p.loss);  // before.loss > target >= p.loss
    return before.sim_seconds + fraction * (p.sim_seconds - before.sim_seconds);
  }
  return std::nullopt;
}

std::optional<double> final_target_loss(const LoadedRun& run) {
  const TargetCurve curve = target_curve(run);
  if (curve.points.empty()) return std::nullopt;
  return curve.points.back().loss;
}

double default_target_loss(const std::vector<LoadedRun>& runs) {
  std::optional<double> highest;
  for (const LoadedRun& run : runs)
    if (const auto loss = final_target_loss(run)) highest = std::max(highest.value_or(*loss), *loss);
  if (!highest) throw InputError("--target-loss", "no run has a finite loss to choose a default target from; give one");
  return *highest;
}

std::optional<size_t> default_baseline(const std::vector<LoadedRun>& runs) {
  std::optional<size_t> best;
  double best_bandwidth = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!is_uncompressed(runs[i])) continue;
    const double bandwidth = run_bandwidth_bytes_per_s(runs[i]);
    if (!best || bandwidth > best_bandwidth) {
      best = i;
      best_bandwidth = bandwidth;
    }
  }
  return best;
}

std::optional<size_t> find_run(const std::vector<LoadedRun>& runs, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path wanted = fs::weakly_canonical(dir, ec);
  for (size_t i = 0; i < runs.size(); ++i) {
    std::error_code ec2;
    if (fs::weakly_canonical(runs[i].dir, ec2) == wanted && !ec && !ec2) return i;
  }
  return std::nullopt;
}

std::string format_number(double x, int digits) {
  if (!std::isfinite(x)) return std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf");
  char text[64];
  if (x == 0 || std::fabs(x) >= 1e15) {
    std::snprintf(text, sizeof text, "%.*g", digits, x);
    return text;
  }
  const int magnitude = int(std::floor(std::log10(std::fabs(x))));
  const int decimals = std::clamp(digits - 1 - magnitude, 0, 12);
  std::snprintf(text, sizeof text, "%.*f", decimals, x);
  return text;
}

TimeUnit time_unit_for(double largest_seconds) {
  if (largest_seconds >= 2 * 3600) return {"h", 3600};
  if (largest_seconds >= 2 * 60) return {"min", 60};
  return {"s", 1};
}

std::string format_time(double seconds) {
  if (std::fabs(seconds) < 1 && seconds != 0) return format_number(seconds * 1e3, 3) + " ms";
  const TimeUnit unit = time_unit_for(std::fabs(seconds));
  return format_number(seconds / unit.seconds, 3) + " " + unit.name;
}

}  // namespace lowband::report
