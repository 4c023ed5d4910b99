#include "runtime/report/report_answers.h"

#include <cstdio>
#include <sstream>

#include "runtime/report/report_table.h"
#include "runtime/report/run_metrics.h"

namespace lowband::report {
namespace {


std::string threshold_cell(const AnswerArm& arm, size_t seeds, bool seconds) {
  if (arm.reached == 0) return "never";
  const auto& m = seconds ? arm.seconds_to_threshold : arm.steps_to_threshold;
  if (!m) return std::to_string(arm.reached) + " of " + std::to_string(seeds) + " seeds";
  if (!seconds) return interval_cell(m, 3);
  std::string text = format_time(m->mean);
  if (m->half_width) text += " ± " + format_time(*m->half_width);
  return text;
}

std::string area_difference_cell(const Report& r, const AnswerTable& t, size_t a) {
  if (r.baseline && *r.baseline == a) return "baseline";
  const AnswerArm& arm = t.arms[a];
  if (!r.baseline || !arm.area || !t.arms[*r.baseline].area) return "—";
  return difference_text(arm.area->mean - t.arms[*r.baseline].area->mean, arm.area_vs_baseline, 3);
}

}  // namespace

AnswerRun answer_run(const LoadedRun& run, double threshold) {
  AnswerRun out;
  const std::vector<AnswerPoint>& a = run.answers;
  if (a.empty()) return out;
  out.final_remote = a.back().remote_accuracy;
  out.final_local = a.back().local_accuracy;
  if (a.size() == 1) {
    out.area = a.front().remote_accuracy;
  } else {
    double sum = 0;
    for (size_t i = 1; i < a.size(); ++i)
      sum += 0.5 * (a[i].remote_accuracy + a[i - 1].remote_accuracy) * double(a[i].step - a[i - 1].step);
    out.area = sum / double(a.back().step - a.front().step);
  }
  for (const AnswerPoint& p : a)
    if (p.remote_accuracy >= threshold) {
      out.steps_to_threshold = p.step;
      out.seconds_to_threshold = p.sim_seconds;
      break;
    }
  return out;
}

std::optional<AnswerTable> answer_table(const std::vector<LoadedRun>& runs, const Report& report, double threshold) {
  bool any = false;
  for (const LoadedRun& run : runs) any = any || !run.answers.empty();
  if (!any) return std::nullopt;
  AnswerTable t;
  t.threshold = threshold;
  for (const LoadedRun& run : runs) t.runs.push_back(answer_run(run, threshold));
  for (const ArmRow& arm : report.arms) {
    AnswerArm out;
    out.final_remote = arm_value(t.runs, arm.rows, [](const AnswerRun& r) { return r.final_remote; });
    out.final_local = arm_value(t.runs, arm.rows, [](const AnswerRun& r) { return r.final_local; });
    out.area = arm_value(t.runs, arm.rows, [](const AnswerRun& r) { return r.area; });
    out.reached = int(values_of(t.runs, arm.rows, [](const AnswerRun& r) { return r.steps_to_threshold; }).size());
    out.steps_to_threshold = arm_value(t.runs, arm.rows, [](const AnswerRun& r) { return r.steps_to_threshold; });
    out.seconds_to_threshold = arm_value(t.runs, arm.rows, [](const AnswerRun& r) { return r.seconds_to_threshold; });
    t.arms.push_back(out);
  }
  if (report.baseline) {
    const auto area = [](const AnswerRun& r) { return r.area; };
    const std::vector<double> base = values_of(t.runs, report.arms[*report.baseline].rows, area);
    for (size_t a = 0; a < t.arms.size(); ++a)
      if (a != *report.baseline && t.arms[a].area)
        t.arms[a].area_vs_baseline = welch_t_test(values_of(t.runs, report.arms[a].rows, area), base);
  }
  return t;
}

std::string answer_markdown(const Report& r, const AnswerTable& t) {
  std::ostringstream out;
  char th_text[32];
  std::snprintf(th_text, sizeof th_text, "%g", t.threshold);
  const std::string th = th_text;
  out << "\n## Keyed recall: accuracy on the answers only remote K/V carry\n\n"
      << "- Remote answers: query digits whose predicting context rank holds no earlier copy of the pair (only "
         "other ranks' K/V carry them); local answers: the rest, a control any codec should keep. Chance is 0.1.\n"
      << "- Area: the remote accuracy's trapezoid area over steps from the first evaluation to the last, over "
         "that span (its mean over the run: it rewards learning early). Steps and time to "
      << th << ": the first evaluation at or above it (no interpolation; simulated time as in the table above). "
      << "Mean ± 95 % Student-t half-width over seeds; Δ area: Welch's test against the baseline, as above.\n\n"
      << "| run | seeds | remote acc. (final) | local acc. (final) | remote acc. area | Δ area vs baseline | steps to "
      << th << " | time to " << th << " |\n|---|---|---:|---:|---:|---|---:|---:|\n";
  for (size_t a = 0; a < r.arms.size(); ++a) {
    const ArmRow& arm = r.arms[a];
    const AnswerArm& x = t.arms[a];
    out << "| `" << arm.label << "` | " << arm.seeds.size() << " | " << interval_cell(x.final_remote, 3) << " | "
        << interval_cell(x.final_local, 3) << " | " << interval_cell(x.area, 3) << " | " << area_difference_cell(r, t, a) << " | "
        << threshold_cell(x, arm.rows.size(), false) << " | " << threshold_cell(x, arm.rows.size(), true) << " |\n";
  }
  return out.str();
}

}  // namespace lowband::report
