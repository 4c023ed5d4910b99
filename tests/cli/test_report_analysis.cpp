// runtime/report: time to target (interpolation, the training-loss fallback), the
// default target and baseline, a run's bandwidth per topology, compression series
// names, labels, and reading directories (sweep points left out, malformed files).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "runtime/report/report_table.h"
#include "runtime/report/run_dir_reader.h"
#include "runtime/report/run_metrics.h"
#include "runtime/report/seed_groups.h"
#include "runtime/report/stats.h"
#include "tests/temp_dir.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace lowband::report;

namespace {

std::string kv_method_of(const LoadedRun& r) { return r.scenario["compression"]["method"].get<std::string>(); }

LoadedRun make_run(const std::string& name, const std::string& bandwidth, const std::string& method,
                 std::vector<CurveRow> curve) {
  LoadedRun r;
  r.dir = "/runs/" + name;
  r.name = r.label = name;
  r.scenario = {{"name", name},
                {"network", {{"topology", "star"}, {"bandwidth", bandwidth}}},
                {"compression", {{"method", method}, {"k_ratio", 0.9}, {"v_ratio", 0.5}}}};
  r.summary = {{"scenario", name}};
  r.curve = std::move(curve);
  return r;
}

TEST(ReportTimeToTarget, InterpolatesBetweenTheEvaluationsAroundTheCrossing) {
  TargetCurve c;
  c.points = {{10, 3.0}, {20, 2.0}, {30, 1.0}};
  EXPECT_DOUBLE_EQ(*time_to_target_seconds(c, 2.5), 15.0);
  EXPECT_DOUBLE_EQ(*time_to_target_seconds(c, 1.2), 20 + 10 * 0.8);
  EXPECT_DOUBLE_EQ(*time_to_target_seconds(c, 2.0), 20.0);  // reached exactly at an evaluation
  EXPECT_DOUBLE_EQ(*time_to_target_seconds(c, 5.0), 10.0);  // already there at the first one
  EXPECT_FALSE(time_to_target_seconds(c, 0.5).has_value());
}

TEST(ReportTimeToTarget, UsesValidationLossesAndSkipsTheStepsWithout) {
  const LoadedRun r = make_run("a", "1Gbps", "none",
                             {{1, 1.0, 9.0, std::nullopt}, {2, 2.0, 8.0, 4.0}, {3, 3.0, 7.0, std::nullopt}, {4, 4.0, 1.0, 2.0}});
  const TargetCurve c = target_curve(r);
  EXPECT_TRUE(c.validation);
  ASSERT_EQ(c.points.size(), 2u);
  EXPECT_DOUBLE_EQ(*time_to_target_seconds(c, 3.0), 3.0);  // halfway between (2 s, 4.0) and (4 s, 2.0)
  EXPECT_DOUBLE_EQ(*final_target_loss(r), 2.0);
}

TEST(ReportTimeToTarget, WithOneValidationLossUsesATrailingMeanOfTheTrainingLoss) {
  std::vector<CurveRow> rows;
  for (int i = 1; i <= 25; ++i) rows.push_back({i, double(i), double(100 - i), std::nullopt});
  rows.back().val_loss = 1.0;  // evaluated at the end only: says nothing about when the loss got there
  const TargetCurve c = target_curve(make_run("a", "1Gbps", "none", rows));
  EXPECT_FALSE(c.validation);
  ASSERT_EQ(c.points.size(), 25u);
  EXPECT_DOUBLE_EQ(c.points[0].loss, 99.0);
  EXPECT_DOUBLE_EQ(c.points[24].loss, (75 + 84) / 2.0);  // steps 16..25
  EXPECT_DOUBLE_EQ(c.points[24].sim_seconds, 25.0);
}

TEST(ReportDefaults, TargetIsTheHighestFinalLossAndBaselineTheFastestUncompressedRun) {
  const std::vector<LoadedRun> runs = {
      make_run("slow", "300Mbps", "none", {{1, 1, 5, 4.0}, {2, 2, 5, 3.0}}),
      make_run("fast-mos", "100Gbps", "mos", {{1, 1, 5, 4.0}, {2, 2, 5, 3.5}}),
      make_run("fast", "10Gbps", "none", {{1, 1, 5, 4.0}, {2, 2, 5, 2.5}}),
  };
  EXPECT_DOUBLE_EQ(default_target_loss(runs), 3.5);
  EXPECT_EQ(default_baseline(runs), std::optional<size_t>(2));
  EXPECT_FALSE(default_baseline({runs[1]}).has_value());
  EXPECT_THROW(default_target_loss({make_run("empty", "1Gbps", "none", {})}), lowband::InputError);
}

TEST(ReportBandwidth, StarUsesItsBandwidthOthersTheSlowestLinkProjectedRunsTheProjectedNetwork) {
  LoadedRun r = make_run("a", "300Mbps", "none", {});
  EXPECT_DOUBLE_EQ(run_bandwidth_bytes_per_s(r), 300e6 / 8);
  r.scenario["network"] = {{"topology", "clusters"},
                           {"clusters", {{{"nodes", 4}, {"bandwidth", "100Gbps"}}, {{"nodes", 4}, {"bandwidth", "25Gbps"}}}},
                           {"wan", {{"bandwidth", "1Gbps"}, {"latency", "20ms"}}}};
  EXPECT_DOUBLE_EQ(run_bandwidth_bytes_per_s(r), 1e9 / 8);
  r.scenario["network"] = {{"topology", "explicit"},
                           {"links", {{{"between", {0, 1}}, {"bandwidth", "1Gbps"}}, {{"between", {1, 2}}, {"bandwidth", "80Mbps"}}}}};
  EXPECT_DOUBLE_EQ(run_bandwidth_bytes_per_s(r), 80e6 / 8);
  r.scenario["projection"] = {{"scenario", {{"network", {{"topology", "star"}, {"bandwidth", "100Gbps"}}}}}};
  EXPECT_DOUBLE_EQ(run_bandwidth_bytes_per_s(r), 100e9 / 8);
  r.scenario["projection"] = {{"scenario", "mos-paper-decentralized-300mbps"}};  // a built-in by name
  EXPECT_DOUBLE_EQ(run_bandwidth_bytes_per_s(r), 300e6 / 8);
  r.scenario.erase("projection");
  r.scenario["network"] = {{"topology", "star"}};
  EXPECT_THROW(run_bandwidth_bytes_per_s(r), lowband::InputError);
}

TEST(ReportSeries, CompressionComesFromTheSweepSettingsElseTheScenario) {
  LoadedRun r = make_run("a", "1Gbps", "mos", {});
  EXPECT_EQ(compression_label(r), "mos K 0.9 / V 0.5");
  EXPECT_EQ(compression_label(make_run("b", "1Gbps", "none", {})), "uncompressed");
  r.sweep_settings = {{"network.bandwidth", "1Gbps"}, {"compression.ratio", 0.9}};
  EXPECT_EQ(compression_label(r), "compression.ratio=0.9");
}

// Heterogeneous replicas: the boundary codec applies only to those with
// compress_boundaries, and the label says which (none: uncompressed).
TEST(ReportSeries, BoundaryLabelNamesTheCompressingReplicas) {
  LoadedRun r = make_run("h", "1Gbps", "none", {});
  r.scenario["compression"]["boundary"] = {{"method", "subspace"}, {"rank", 16}};
  r.scenario["parallel"]["replicas"] = {{{"pipeline", 1}}, {{"pipeline", 1}}, {{"pipeline", 4}, {"compress_boundaries", true}},
                                        {{"pipeline", 4}, {"compress_boundaries", true}}};
  EXPECT_EQ(compression_label(r), "boundary subspace k=16 (replicas 2, 3)");
  r.scenario["parallel"]["replicas"][3]["compress_boundaries"] = false;
  EXPECT_EQ(compression_label(r), "boundary subspace k=16 (replica 2)");
  r.scenario["parallel"]["replicas"][2]["compress_boundaries"] = false;
  EXPECT_EQ(compression_label(r), "uncompressed");
  EXPECT_TRUE(is_uncompressed(r));
  for (auto& replica : r.scenario["parallel"]["replicas"]) replica["compress_boundaries"] = true;
  EXPECT_EQ(compression_label(r), "boundary subspace k=16");
}

TEST(ReportSeries, SharedNamesGetTheirSettingsOrDirectory) {
  std::vector<LoadedRun> runs = {make_run("q", "1Gbps", "none", {}), make_run("q", "1Gbps", "none", {}),
                               make_run("other", "1Gbps", "none", {})};
  runs[0].sweep_settings = {{"compression.ratio", 0}};
  runs[1].dir = "/runs/second";
  assign_labels(runs);
  EXPECT_EQ(runs[0].label, "q (compression.ratio=0)");
  EXPECT_EQ(runs[1].label, "q (second)");
  EXPECT_EQ(runs[2].label, "other");
}

TEST(ReportTable, RatioToBaselineComesFromTheRuns) {
  LoadedRuns loaded;
  loaded.runs = {make_run("base", "10Gbps", "none", {{1, 10, 5, 4.0}, {2, 20, 4, 2.0}}),
                 make_run("slow", "300Mbps", "none", {{1, 30, 5, 4.0}, {2, 60, 4, 2.0}})};
  loaded.runs[1].summary["final_val_loss"] = 2.0;
  const Report r = build_report(loaded, {{3.0}, kDefaultTargetFractions, ""});
  ASSERT_EQ(r.baseline, std::optional<size_t>(0));
  ASSERT_EQ(r.arms.size(), 2u);  // different networks: two arms of one seed each
  EXPECT_DOUBLE_EQ(*r.rows[0].time_to_target_seconds[0], 15.0);
  EXPECT_DOUBLE_EQ(*r.rows[1].time_to_target_seconds[0], 45.0);
  EXPECT_DOUBLE_EQ(*r.arms[1].targets[0].vs_baseline, 3.0);
  EXPECT_FALSE(r.rows[0].final_val_loss.has_value());  // absent from its summary: shown as "—"
  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("| `slow` | 1 (seed ?): no interval | 300 Mbps |"), std::string::npos) << md;
  EXPECT_NE(md.find("45.0 s (3.00×)"), std::string::npos) << md;
}

// Default targets: fractions of the baseline's drop from its first evaluation
// (4.0) to its last (2.0): 50 % is 3.0, 100 % is 2.0.
TEST(ReportTable, DefaultTargetsAreFractionsOfTheBaselinesDrop) {
  LoadedRuns loaded;
  loaded.runs = {make_run("base", "10Gbps", "none", {{1, 10, 5, 4.0}, {2, 20, 4, 2.0}}),
                 make_run("mos", "300Mbps", "mos", {{1, 30, 5, 4.0}, {2, 60, 4, 2.5}})};
  const Report r = build_report(loaded, {{}, {0.5, 1.0}, ""});
  ASSERT_EQ(r.targets.size(), 2u);
  EXPECT_DOUBLE_EQ(r.targets[0].loss, 3.0);
  EXPECT_DOUBLE_EQ(r.targets[1].loss, 2.0);
  EXPECT_EQ(r.target_reference, "base");
  EXPECT_DOUBLE_EQ(r.arms[1].targets[0].seconds->mean, 30 + 30 * (1.0 / 1.5));  // 4.0 -> 2.5 over 30 s
  EXPECT_EQ(r.arms[1].targets[1].reached, 0);                                   // never reaches 2.0
  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("time to loss 3.000 (50 %)"), std::string::npos) << md;
  EXPECT_NE(md.find("| never |"), std::string::npos) << md;
}

// Runs that differ only by seed are one arm: the mean and the Student-t interval
// of their final losses, and Welch's test against the baseline arm.
TEST(ReportTable, SeedsOfOneArmGiveAnIntervalAndWelchsTest) {
  LoadedRuns loaded;
  const std::vector<double> base_losses = {2.0, 2.2, 2.4, 2.6}, mos_losses = {3.0, 3.1, 3.2};
  for (size_t k = 0; k < base_losses.size(); ++k) {
    LoadedRun run = make_run("base", "10Gbps", "none", {{1, 10, 5, 4.0}, {2, 20, 4, base_losses[k]}});
    run.scenario["training"] = {{"seed", int(k + 1)}};
    run.summary["final_val_loss"] = base_losses[k];
    loaded.runs.push_back(run);
  }
  for (size_t k = 0; k < mos_losses.size(); ++k) {
    LoadedRun run = make_run("mos", "10Gbps", "mos", {{1, 10, 5, 4.0}, {2, 20, 4, mos_losses[k]}});
    run.scenario["training"] = {{"seed", int(k + 1)}};
    run.summary["final_val_loss"] = mos_losses[k];
    loaded.runs.push_back(run);
  }
  assign_labels(loaded.runs);
  const Report r = build_report(loaded, {{3.5}, {}, ""});
  ASSERT_EQ(r.arms.size(), 2u);
  EXPECT_EQ(r.arms[0].label, "base");
  EXPECT_EQ(r.arms[0].seeds, (std::vector<int64_t>{1, 2, 3, 4}));
  ASSERT_TRUE(r.arms[0].final_val_loss && r.arms[0].final_val_loss->half_width);
  EXPECT_NEAR(r.arms[0].final_val_loss->mean, 2.3, 1e-12);
  EXPECT_NEAR(*r.arms[0].final_val_loss->half_width, 3.18244630528371 * std::sqrt(0.2 / 3) / 2, 1e-9);
  ASSERT_TRUE(r.arms[1].vs_baseline_test.has_value());
  const WelchTest expected = *welch_t_test(mos_losses, base_losses);
  EXPECT_DOUBLE_EQ(r.arms[1].vs_baseline_test->p_value, expected.p_value);
  EXPECT_LT(expected.p_value, kSignificance);  // 0.8 apart, spreads of 0.1 and 0.26
  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("| `base` | 4 (1,2,3,4) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2.3000 ± 0.41 | baseline |"), std::string::npos) << md;
  EXPECT_NE(md.find("+0.8000 ± "), std::string::npos) << md;
  EXPECT_NE(md.find("beyond noise"), std::string::npos) << md;
  EXPECT_NE(md.find("`mos`: 3.0000 (seed 1), 3.1000 (seed 2), 3.2000 (seed 3)"), std::string::npos) << md;

  // One seed a side: the difference, untested, and no interval.
  LoadedRuns single;
  single.runs = {loaded.runs[0], loaded.runs[4]};
  const std::string one = report_markdown(build_report(single, {{3.5}, {}, ""}));
  EXPECT_NE(one.find("no interval"), std::string::npos) << one;
  EXPECT_NE(one.find("+1.0000 (1 seed a side: untested)"), std::string::npos) << one;
  EXPECT_EQ(one.find(" ± ", one.find("| run |")), std::string::npos) << one;  // none in the table
}

TEST(ReportSeeds, GroupsRunsThatDifferOnlyBySeed) {
  std::vector<LoadedRun> runs = {make_run("a", "1Gbps", "none", {}), make_run("a", "1Gbps", "none", {}),
                               make_run("a", "1Gbps", "mos", {}), make_run("a", "1Gbps", "none", {})};
  runs[0].scenario["training"] = {{"seed", 1}, {"steps", 10}};
  runs[1].scenario["training"] = {{"seed", 2}, {"steps", 10}};
  runs[2].scenario["training"] = {{"seed", 3}, {"steps", 10}};
  runs[3].scenario["training"] = {{"seed", 1}, {"steps", 10}};  // seed 1 again: not one more seed of the first arm
  runs[1].scenario["name"] = "a-seed2";
  const std::vector<SeedGroup> groups = group_by_seed(runs);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].runs, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(groups[0].seeds, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(groups[1].runs, (std::vector<size_t>{2}));
  EXPECT_EQ(groups[2].runs, (std::vector<size_t>{3}));
  EXPECT_NE(groups[0].label, groups[2].label);
  // In a sweep with a seed axis the arm is named by its other settings.
  for (LoadedRun& r : runs) {
    r.sweep = "grid";
    r.sweep_settings = {{"training.seed", run_seed(r).value()}, {"compression.method", kv_method_of(r)}};
  }
  EXPECT_EQ(group_by_seed(runs)[0].label, "grid (compression.method=none)");
  EXPECT_EQ(compression_label(runs[0]), "compression.method=none");  // series span seeds
}

class ReportDirs : public ::testing::Test {
 protected:
  void SetUp() override {
    // Per process: ctest -j runs the tests of this suite in parallel processes.
    dir_ = lowband::test_support::unique_test_temp_dir("lowband_report_dirs");
    write_run(dir_ / "a");
  }
  void TearDown() override { fs::remove_all(dir_); }
  static void write_run(const fs::path& d) {
    fs::create_directories(d);
    std::ofstream(d / "scenario.json") << R"({"name": "a", "network": {"bandwidth": "1Gbps"}})";
    std::ofstream(d / "summary.json") << R"({"scenario": "a", "final_val_loss": 2.5})";
    std::ofstream(d / "curve.csv") << "step,sim_seconds,sim_hours,wall_seconds,train_loss,val_loss,lr,bytes_sent_per_rank\n"
                                      "1,0.5,0,1,3.0,,0.1,10\n2,1.0,0,2,nan,2.5,0.1,10\n";
  }
  fs::path dir_;
};

TEST_F(ReportDirs, ReadsTheCurveWithMissingAndNonFiniteValues) {
  const LoadedRun r = load_run_dir((dir_ / "a").string());
  ASSERT_EQ(r.curve.size(), 2u);
  EXPECT_FALSE(r.curve[0].val_loss.has_value());
  EXPECT_TRUE(std::isnan(r.curve[1].train_loss));
  EXPECT_DOUBLE_EQ(*r.curve[1].val_loss, 2.5);
  EXPECT_EQ(r.name, "a");
}

TEST_F(ReportDirs, ASweepKeepsTheDonePointsAndNotesTheOthers) {
  std::ofstream(dir_ / "index.json") << R"({"sweep": "s", "points": [
      {"run_dir": "a", "settings": {"compression.ratio": 0}, "status": "done"},
      {"run_dir": "b", "settings": {"compression.ratio": 0.9}, "status": "pending"}]})";
  const LoadedRuns loaded = load_runs({dir_.string()}, "dirs");
  ASSERT_EQ(loaded.runs.size(), 1u);
  EXPECT_EQ(loaded.runs[0].sweep, "s");
  EXPECT_EQ(loaded.runs[0].sweep_settings["compression.ratio"], 0);
  ASSERT_EQ(loaded.notes.size(), 1u);
  EXPECT_NE(loaded.notes[0].find("status pending"), std::string::npos) << loaded.notes[0];
}

TEST_F(ReportDirs, MalformedFilesNameTheFileAndLine) {
  std::ofstream(dir_ / "a" / "curve.csv") << "step,sim_seconds,train_loss\n1,0.5,3.0\n2,x,2.0\n";
  try {
    load_run_dir((dir_ / "a").string());
    FAIL() << "expected an InputError";
  } catch (const lowband::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("curve.csv:3"), std::string::npos) << e.what();
  }
  std::ofstream(dir_ / "index.json") << R"({"points": "none"})";
  EXPECT_THROW(load_runs({dir_.string()}, "dirs"), lowband::InputError);
}

}  // namespace
