// `lowband plot`'s loss-vs-time figures shade the intervals during which a node or
// link of a run's network.dynamics was down, in the run's colour.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "runtime/report/figures.h"
#include "runtime/report/plot_gnuplot.h"
#include "runtime/report/run_dir_reader.h"
#include "runtime/scenario/load.h"

namespace lowband::report::test {
namespace {

using nlohmann::json;
using Intervals = std::vector<std::pair<double, double>>;

// A run of the built-in default scenario, `steps` steps of `step_seconds`, with
// `dynamics` as its network.dynamics (none when null).
LoadedRun make_run(const std::string& name, const json& dynamics, int steps, double step_seconds) {
  LoadedRun run;
  run.dir = "/nonexistent/" + name;
  run.name = run.label = name;
  run.scenario = to_json(builtin_scenario("default"));
  run.scenario["name"] = name;
  if (!dynamics.is_null()) run.scenario["network"]["dynamics"] = dynamics;
  run.summary = {{"sim_total_seconds", steps * step_seconds}};
  for (int s = 1; s <= steps; ++s) {
    CurveRow row;
    row.step = s;
    row.sim_seconds = s * step_seconds;
    row.train_loss = 5.0 - 0.01 * s;
    if (s % 10 == 0) row.val_loss = 5.0 - 0.01 * s;
    run.curve.push_back(row);
  }
  return run;
}

// A state trace of node `node`: down from `from` to `to` seconds (`to` < 0: for good).
json down(int node, double from, double to) {
  json steps = json::array({json::array({from, 0})});
  if (to >= 0) steps.push_back(json::array({to, 1}));
  return {{"node", node}, {"state", {{"steps", steps}}}};
}

const Figure& figure(const std::vector<Figure>& figures, const std::string& name) {
  for (const Figure& f : figures)
    if (f.name == name) return f;
  throw std::runtime_error("no figure " + name);
}

TEST(ReportFigures, OutageIntervalsOfOneStateTrace) {
  // 100 steps of 10 s: the run's clock ends at 1000 s.
  EXPECT_EQ(outage_intervals(make_run("a", json::array({down(1, 100, 200)}), 100, 10)), (Intervals{{100, 200}}));
  // Clipped to the run's time.
  EXPECT_EQ(outage_intervals(make_run("a", json::array({down(1, 900, 1500)}), 100, 10)), (Intervals{{900, 1000}}));
  EXPECT_EQ(outage_intervals(make_run("a", json::array({down(0, 600, 5000)}), 100, 10)), (Intervals{{600, 1000}}));
  EXPECT_EQ(outage_intervals(make_run("a", json::array({down(0, 2000, 2100)}), 100, 10)), Intervals{});
  // Down from the start.
  EXPECT_EQ(outage_intervals(make_run("a", json::array({down(0, 0, 50)}), 100, 10)), (Intervals{{0, 50}}));
}

TEST(ReportFigures, OutageIntervalsAreTheUnionOfTheStateTraces) {
  const json dynamics = json::array({down(1, 100, 300), down(2, 200, 400), down(3, 700, 800),
                                     // not a state trace: no outage
                                     {{"bandwidth", {{"steps", json::array({json::array({500, 0.5})})}}}}});
  EXPECT_EQ(outage_intervals(make_run("a", dynamics, 100, 10)), (Intervals{{100, 400}, {700, 800}}));
  // A link's state (every link) counts as well; touching intervals join.
  const json links = json::array({down(1, 100, 200), {{"state", {{"steps", json::array({json::array({200, 0}),
                                                                                         json::array({250, 1})})}}}}});
  EXPECT_EQ(outage_intervals(make_run("a", links, 100, 10)), (Intervals{{100, 250}}));
}

TEST(ReportFigures, NoOutagesWithoutStateTraces) {
  EXPECT_EQ(outage_intervals(make_run("a", nullptr, 100, 10)), Intervals{});
  EXPECT_EQ(outage_intervals(make_run("a", json::array(), 100, 10)), Intervals{});
  const json bandwidth = json::array({{{"bandwidth", {{"daily", {{"low", 0.3}}}}}}});
  EXPECT_EQ(outage_intervals(make_run("a", bandwidth, 100, 10)), Intervals{});
}

TEST(ReportFigures, LossVsTimeShadesEachRunsOutagesInItsColour) {
  // 100 steps of 60 s: 6000 s, drawn in minutes.
  const std::vector<LoadedRun> runs = {make_run("steady", nullptr, 100, 60),
                                     make_run("flaky", json::array({down(1, 600, 1200), down(2, 900, 1500)}), 100, 60)};
  const std::vector<Figure> figures = build_figures(runs, 4.5, "--target-loss");
  const Figure& f = figure(figures, "loss_vs_time");
  EXPECT_NE(f.x_label.find("(min)"), std::string::npos) << f.x_label;
  ASSERT_EQ(f.bands.size(), 1u);
  EXPECT_DOUBLE_EQ(f.bands[0].x_from, 10);
  EXPECT_DOUBLE_EQ(f.bands[0].x_to, 25);
  EXPECT_EQ(f.bands[0].color, 1);  // the flaky run's series colour
  for (const Series& s : f.series)
    if (s.title.rfind("flaky", 0) == 0) {
      EXPECT_EQ(s.color, 1);
    }
  EXPECT_EQ(f.bands_title, kOutageBandsTitle);
  EXPECT_NE(f.notes.back().find(kOutageBandsTitle), std::string::npos);

  const std::string gp = gnuplot_script(f, {"png", "svg"});
  EXPECT_NE(gp.find("set object 1 rect from first 10, graph 0 to first 25, graph 1 fillcolor rgb \"#D55E00\" "
                    "fillstyle transparent solid 0.15 noborder behind\n"),
            std::string::npos)
      << gp;
  EXPECT_EQ(gp.find("set object 2 "), std::string::npos) << gp;
  EXPECT_NE(gp.find("keyentry with boxes"), std::string::npos) << gp;
  EXPECT_NE(gp.find(kOutageBandsTitle), std::string::npos) << gp;
  EXPECT_NE(gnuplot_data(f).find("# shaded: 10 to 25"), std::string::npos);

  // The log-time figure keeps the band; the step figure has none.
  const Figure& log_f = figure(figures, "val_loss_vs_time_log");
  ASSERT_EQ(log_f.bands.size(), 1u);
  EXPECT_DOUBLE_EQ(log_f.bands[0].x_from, 10);
  EXPECT_TRUE(figure(figures, "loss_vs_step").bands.empty());
}

TEST(ReportFigures, NoBandsWithoutOutages) {
  const std::vector<LoadedRun> runs = {make_run("steady", nullptr, 100, 10)};
  const Figure f = figure(build_figures(runs, 4.5, "--target-loss"), "loss_vs_time");
  EXPECT_TRUE(f.bands.empty());
  EXPECT_TRUE(f.bands_title.empty());
  const std::string gp = gnuplot_script(f, {"png"});
  EXPECT_EQ(gp.find("set object"), std::string::npos) << gp;
  EXPECT_EQ(gp.find("keyentry"), std::string::npos) << gp;
}

TEST(ReportFigures, LogTimeBandsStartAtTheFirstTimeDrawn) {
  // Validation every 10 steps of 1 s (100 s, drawn in seconds): the log figure's first point is at 10 s.
  const std::vector<LoadedRun> runs = {make_run("flaky", json::array({down(0, 0, 5), down(1, 8, 30)}), 100, 1)};
  const std::vector<Figure> figures = build_figures(runs, 4.5, "--target-loss");
  EXPECT_EQ(figure(figures, "loss_vs_time").bands.size(), 2u);
  const Figure& log_f = figure(figures, "val_loss_vs_time_log");
  ASSERT_EQ(log_f.bands.size(), 1u);
  EXPECT_DOUBLE_EQ(log_f.bands[0].x_from, 10);
  EXPECT_DOUBLE_EQ(log_f.bands[0].x_to, 30);
}

TEST(ReportFigures, AScenarioThatDoesNotLoadIsANoteNotAFailure) {
  LoadedRun run = make_run("broken", json::array({down(1, 100, 200)}), 100, 10);
  run.scenario["network"]["dynamics"][0]["state"]["steps"][0][1] = 0.5;  // a state is 0 or 1
  const Figure f = figure(build_figures({run}, 4.5, "--target-loss"), "loss_vs_time");
  EXPECT_TRUE(f.bands.empty());
  ASSERT_FALSE(f.notes.empty());
  EXPECT_NE(f.notes.back().find("broken: outages not shaded"), std::string::npos) << f.notes.back();
}

// Beyond kMostRunsWithTrainingCurves runs the loss figures draw validation only (a
// dozen noisy training curves hid every validation curve); --curves both draws all.
// A run without validation losses keeps its training curve.
TEST(ReportFigures, ManyRunsDrawValidationOnlyUnlessAskedForBoth) {
  const auto styles = [](const Figure& f) {
    int lines = 0, points = 0;
    for (const Series& s : f.series) (s.style == Series::Style::lines ? lines : points) += 1;
    return std::pair<int, int>{lines, points};
  };
  std::vector<LoadedRun> runs;
  for (int i = 0; i < int(kMostRunsWithTrainingCurves); ++i) runs.push_back(make_run("r" + std::to_string(i), nullptr, 50, 1));
  for (const char* name : {"loss_vs_time", "loss_vs_step"}) {  // make_run writes no byte counts
    SCOPED_TRACE(name);
    const int n = int(runs.size());
    EXPECT_EQ(styles(figure(build_figures(runs, 4.5, "x"), name)), std::make_pair(n, n));
    EXPECT_TRUE(figure(build_figures(runs, 4.5, "x"), name).notes.empty());
    EXPECT_EQ(styles(figure(build_figures(runs, 4.5, "x", LossCurves::validation), name)), std::make_pair(0, n));
  }
  LoadedRun no_validation = make_run("train-only", nullptr, 50, 1);
  for (CurveRow& row : no_validation.curve) row.val_loss.reset();
  runs.push_back(no_validation);  // one past the limit
  const Figure automatic = figure(build_figures(runs, 4.5, "x"), "loss_vs_time");
  EXPECT_EQ(styles(automatic), std::make_pair(1, int(kMostRunsWithTrainingCurves)));
  EXPECT_EQ(automatic.series[automatic.series.size() - 1].title, "train-only train");
  ASSERT_EQ(automatic.notes.size(), 1u);
  EXPECT_NE(automatic.notes[0].find("--curves both"), std::string::npos) << automatic.notes[0];
  EXPECT_EQ(styles(figure(build_figures(runs, 4.5, "x", LossCurves::both), "loss_vs_time")),
            std::make_pair(int(runs.size()), int(kMostRunsWithTrainingCurves)));
}

}  // namespace
}  // namespace lowband::report::test
