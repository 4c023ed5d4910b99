// report_markdown: a run that stopped early says how far it got in whole steps.
#include <gtest/gtest.h>

#include <string>

#include "runtime/report/figures.h"
#include "runtime/report/report_table.h"
#include "runtime/report/run_dir_reader.h"

namespace lowband::report::test {
namespace {

// Each row its own arm of one seed, as build_report makes runs that share no arm.
void one_arm_per_row(Report& r) {
  for (size_t i = 0; i < r.rows.size(); ++i) r.arms.push_back({r.rows[i].label, {i}, {1}, {}, {}, {}, {}, {}});
}

TEST(ReportTable, AnUnfinishedRunCountsWholeSteps) {
  Report r;
  ReportRow row;
  row.label = "stopped";
  row.steps_done = 8;
  row.steps_planned = 40;
  r.rows.push_back(row);
  one_arm_per_row(r);
  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("(8/40 steps)"), std::string::npos) << md;
}

// The bytes a rank sends per step, and of them what carries K/V, boundaries,
// weights and the rest (grouped from the summary's kinds; a lone group adds nothing).
TEST(ReportTable, BytesPerStepSayWhatTheyCarry) {
  Report r;
  ReportRow row;
  row.label = "mos";
  row.bytes_per_step = 3.0 * 1024 * 1024;
  row.bytes_per_step_by_group = {{"K/V", 1024.0 * 1024}, {"weights", 2.0 * 1024 * 1024}};
  r.rows.push_back(row);
  row.label = "one kind";
  row.bytes_per_step_by_group = {{"weights", 3.0 * 1024 * 1024}};
  r.rows.push_back(row);
  one_arm_per_row(r);
  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("| 3 MiB (K/V 1 MiB, weights 2 MiB) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 3 MiB |"), std::string::npos) << md;
}

// A pipeline run whose boundaries compress is not an uncompressed baseline, and
// its label says what crosses the boundaries.
TEST(ReportTable, BoundaryCompressionIsCompression) {
  LoadedRun run;
  run.scenario = nlohmann::json::parse(R"({"compression": {"method": "none", "boundary": {"method": "none"}}})");
  EXPECT_TRUE(is_uncompressed(run));
  EXPECT_EQ(compression_label(run), "uncompressed");
  run.scenario["compression"]["boundary"] = {{"method", "subspace"}, {"rank", 8}};
  EXPECT_FALSE(is_uncompressed(run));
  EXPECT_EQ(compression_label(run), "boundary subspace k=8");
  run.scenario["compression"]["method"] = "topk";
  run.scenario["compression"]["topk_fraction"] = 0.1;
  EXPECT_EQ(compression_label(run), "topk 0.1, boundary subspace k=8");
  // A compressed weight sync is compression too, alone or beside a codec.
  run.scenario["compression"]["weight_sync"] = "lowrank_grad";
  run.scenario["compression"]["sync_fraction"] = 0.05;
  EXPECT_EQ(compression_label(run), "topk 0.1, boundary subspace k=8, weights lowrank_grad 0.05");
  run.scenario["compression"] = {{"method", "none"}, {"weight_sync", "sparse"}, {"sync_fraction", 0.05}, {"sync_every", 10}};
  EXPECT_FALSE(is_uncompressed(run));
  EXPECT_EQ(compression_label(run), "weights sparse 0.05 every 10");
}

}  // namespace
}  // namespace lowband::report::test

namespace lowband::report::test {
namespace {

LoadedRun recall_run(const std::string& method, int seed, std::vector<double> remote) {
  LoadedRun run;
  run.name = run.label = method;
  run.dir = method + "-s" + std::to_string(seed);
  run.scenario = {{"name", method},
                  {"compression", {{"method", method}}},
                  {"network", {{"topology", "star"}, {"bandwidth", "300Mbps"}}},
                  {"training", {{"seed", seed}}}};
  run.summary = nlohmann::json::object();
  for (size_t i = 0; i < remote.size(); ++i) {
    const int step = 50 * int(i + 1);
    run.curve.push_back({step, 2.0 * step, 1.0, 1.0});
    run.answers.push_back({step, 2.0 * step, remote[i], 0.99});
  }
  return run;
}

// Time to target between arms: the same loss curve on a clock 2× slower is 2× the
// time, beyond the seeds' noise (Welch), and the cell says so in bold with its p.
TEST(ReportTable, TimeToTargetIsTestedAgainstTheBaseline) {
  LoadedRuns loaded;
  for (int arm = 0; arm < 2; ++arm)
    for (int seed = 1; seed <= 3; ++seed) {
      LoadedRun run = recall_run(arm == 0 ? "none" : "topk", seed, {});
      const double per_step = (arm == 0 ? 1.0 : 2.0) * (1.0 + 0.01 * seed);  // seconds; seeds differ a little
      for (int step = 10; step <= 50; step += 10)
        run.curve.push_back({step, per_step * step, 3.0 - step / 50.0, 3.0 - step / 50.0});
      run.summary = {{"final_val_loss", 2.0}};
      loaded.runs.push_back(run);
    }
  const Report r = build_report(loaded, {});
  ASSERT_TRUE(r.baseline);
  const ArmRow& slower = r.arms[1 - *r.baseline];
  ASSERT_FALSE(slower.targets.empty());
  ASSERT_TRUE(slower.targets[0].vs_baseline && slower.targets[0].vs_baseline_test);
  EXPECT_NEAR(*slower.targets[0].vs_baseline, 2.0, 1e-9);
  EXPECT_LT(slower.targets[0].vs_baseline_test->p_value, 0.05);
  EXPECT_FALSE(r.arms[*r.baseline].targets[0].vs_baseline_test);  // the baseline is not tested against itself
  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("(**2.00×**, p "), std::string::npos) << md;
}

// By hand: evaluations at steps 50, 100, 150 with remote accuracy 0.4, 0.6, 1.0:
// area (0.5·(0.4+0.6)·50 + 0.5·(0.6+1.0)·50) / 100 = 0.65; 0.9 first at step 150.
TEST(ReportAnswers, AreaAndFirstStepAtTheThresholdByHand) {
  const AnswerRun a = answer_run(recall_run("none", 1, {0.4, 0.6, 1.0}), 0.9);
  ASSERT_TRUE(a.area && a.steps_to_threshold && a.seconds_to_threshold && a.final_remote);
  EXPECT_NEAR(*a.area, 0.65, 1e-12);
  EXPECT_EQ(*a.steps_to_threshold, 150);
  EXPECT_EQ(*a.seconds_to_threshold, 300);
  EXPECT_EQ(*a.final_remote, 1.0);
  EXPECT_FALSE(answer_run(recall_run("none", 1, {0.4, 0.6, 0.89}), 0.9).steps_to_threshold);
  EXPECT_FALSE(answer_run(LoadedRun{}, 0.9).area);  // no recall evaluations: nothing invented
}

// Two arms of three seeds: the codec that learns later has a smaller area, beyond
// the seeds' noise; an arm where one seed never reaches 0.9 says "2 of 3 seeds";
// runs of another task get no recall table.
TEST(ReportAnswers, ArmsGetIntervalsAndATestOfTheArea) {
  LoadedRuns loaded;
  const std::vector<std::vector<double>> fast = {{0.5, 0.9, 1.0}, {0.45, 0.95, 1.0}, {0.55, 0.92, 1.0}};
  const std::vector<std::vector<double>> slow = {{0.1, 0.3, 0.95}, {0.12, 0.35, 0.91}, {0.1, 0.4, 0.5}};
  for (int s = 0; s < 3; ++s) loaded.runs.push_back(recall_run("none", s + 1, fast[size_t(s)]));
  for (int s = 0; s < 3; ++s) loaded.runs.push_back(recall_run("drop", s + 1, slow[size_t(s)]));
  const Report r = build_report(loaded, {});
  ASSERT_TRUE(r.answers);
  ASSERT_EQ(r.arms.size(), 2u);
  ASSERT_TRUE(r.baseline);
  const size_t other = 1 - *r.baseline;
  const AnswerArm& base = r.answers->arms[*r.baseline];
  const AnswerArm& slower = r.answers->arms[other];
  ASSERT_TRUE(base.area && base.area->half_width && slower.area);
  EXPECT_EQ(base.area->n, 3);
  EXPECT_EQ(base.reached, 3);
  ASSERT_TRUE(base.steps_to_threshold);
  EXPECT_NEAR(base.steps_to_threshold->mean, 100, 1e-12);
  EXPECT_EQ(slower.reached, 2);
  EXPECT_FALSE(slower.steps_to_threshold);  // not every seed: no mean
  ASSERT_TRUE(slower.area_vs_baseline);
  EXPECT_LT(slower.area_vs_baseline->difference, 0);
  EXPECT_LT(slower.area_vs_baseline->p_value, 0.05);
  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("## Keyed recall"), std::string::npos) << md;
  EXPECT_NE(md.find("**beyond noise**"), std::string::npos) << md;
  EXPECT_NE(md.find("2 of 3 seeds"), std::string::npos) << md;

  for (LoadedRun& run : loaded.runs) run.answers.clear();
  EXPECT_FALSE(build_report(loaded, {}).answers);
}

// The recall figures: per arm the mean remote accuracy per evaluation in a band
// over seeds; per arm its area against the K/V bytes sent over the run, arms that
// differ only in size (here the top-k fraction) on one curve in order of bytes,
// and an arm that sent nothing named in a note (it has no place on a log axis).
TEST(ReportAnswers, RecallFiguresBandTheSeedsAndJoinArmsOfOneCodec) {
  std::vector<LoadedRun> runs;
  auto add = [&](const std::string& method, double fraction, double kv_bytes, const std::vector<double>& remote) {
    for (int seed = 1; seed <= 3; ++seed) {
      LoadedRun run = recall_run(method, seed, remote);
      if (fraction > 0) run.scenario["compression"]["topk_fraction"] = fraction;
      run.summary = {{"steps_done", 100}, {"bytes_sent_per_rank_per_step", {{"kv", kv_bytes}, {"dkv", kv_bytes}}}};
      runs.push_back(run);
    }
  };
  add("topk", 0.1, 1 << 20, {0.3, 0.6, 0.9});
  add("topk", 0.01, 1 << 16, {0.2, 0.4, 0.8});
  add("drop", 0, 0, {0.1, 0.1, 0.1});
  runs[1].answers[0].remote_accuracy = 0.4;  // seeds differ: a band of some width
  const std::vector<Figure> figures = recall_figures(runs);
  ASSERT_EQ(figures.size(), 2u);
  const Figure& steps = figures[0];
  EXPECT_EQ(steps.name, "remote_accuracy_vs_step_seeds");
  ASSERT_EQ(steps.series.size(), 3u);
  for (const Series& s : steps.series) {
    EXPECT_EQ(s.points.size(), 3u) << s.title;
    ASSERT_EQ(s.y_band.size(), s.points.size()) << s.title;
    for (size_t k = 0; k < s.points.size(); ++k) {
      EXPECT_LE(s.y_band[k].first, s.points[k].second);
      EXPECT_GE(s.y_band[k].second, s.points[k].second);
      EXPECT_GE(s.y_band[k].first, 0.0);
      EXPECT_LE(s.y_band[k].second, 1.0);
    }
  }
  const Figure& bytes = figures[1];
  EXPECT_EQ(bytes.name, "remote_accuracy_vs_kv_bytes");
  ASSERT_EQ(bytes.series.size(), 1u);  // both top-k arms on one curve; drop in a note
  const Series& topk = bytes.series[0];
  ASSERT_EQ(topk.points.size(), 2u);
  EXPECT_NEAR(topk.points[0].first, 2.0 * (1 << 16) * 100 / (1 << 20), 1e-9);  // MiB over the run, fewest first
  EXPECT_GT(topk.points[1].first, topk.points[0].first);
  EXPECT_EQ(topk.title, "topk, topk #2");  // the arms it joins
  ASSERT_EQ(bytes.notes.size(), 1u);
  EXPECT_NE(bytes.notes[0].find("drop: no K/V bytes"), std::string::npos) << bytes.notes[0];

  for (LoadedRun& run : runs) run.answers.clear();
  EXPECT_TRUE(recall_figures(runs).empty());  // another task: no recall figures
}

}  // namespace
}  // namespace lowband::report::test
