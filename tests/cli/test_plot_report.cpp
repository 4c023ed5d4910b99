// `lowband plot` and `lowband report` end to end, on tiny real runs (a fraction of a
// second each) and a sweep directory written by hand to index.json's contract
// (runtime/sweep/index.h): the files exist with one series per run or compression,
// the report's cells come from the run directories, bad input exits 2 writing nothing.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include "tests/slurp.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lowband::test_support::slurp;

const char* kTiny =
    " --set model.layers=1 --set model.d_model=32 --set model.heads=2 --set model.kv_heads=2"
    " --set model.ffn_hidden=64 --set model.seq_len=64 --set training.steps=12 --set training.eval_every=4"
    " --set training.lr_warmup_steps=2";

int run_lowband(const std::string& args, const fs::path& dir, std::string* out, std::string* err,
                const std::string& env = "") {
  const std::string cmd = env + " " + std::string(LOWBAND_BINARY) + " " + args + " >" + (dir / "stdout").string() +
                          " 2>" + (dir / "stderr").string();
  const int status = std::system(cmd.c_str());
  if (out) *out = slurp(dir / "stdout");
  if (err) *err = slurp(dir / "stderr");
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Three runs (once for the whole suite) and a sweep directory over them.
class PlotReport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One directory per process: ctest -j runs this suite's tests in parallel processes.
    root_ = fs::temp_directory_path() / ("lowband_plot_report_cli-" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "sweep");
    const std::vector<std::pair<std::string, std::string>> runs = {
        {"fast", "--set name=tiny-fast --set network.bandwidth=10Gbps"},
        {"slow", "--set name=tiny-slow --set network.bandwidth=300Mbps"},
        {"mos", "--set name=tiny-mos --set network.bandwidth=300Mbps --set compression.method=mos"
                " --set compression.k_ratio=0.9 --set compression.v_ratio=0.9 --set compression.warmup_steps=4"
                " --set compression.compress_final_layer=true"}};  // its one layer is the final one
    for (const auto& [dir, sets] : runs) {
      std::string err;
      const int rc = run_lowband("run" + std::string(kTiny) + " " + sets + " --out " + (root_ / "sweep" / dir).string(),
                                 root_, nullptr, &err);
      ASSERT_EQ(rc, 0) << err;
    }
    const json index = {
        {"sweep", "tiny"},
        {"axes", {{"network.bandwidth", {"300Mbps", "10Gbps"}}, {"compression.ratio", {0, 0.9}}}},
        {"points",
         {{{"run_dir", "slow"}, {"settings", {{"network.bandwidth", "300Mbps"}, {"compression.ratio", 0}}}, {"status", "done"}},
          {{"run_dir", "fast"}, {"settings", {{"network.bandwidth", "10Gbps"}, {"compression.ratio", 0}}}, {"status", "done"}},
          {{"run_dir", "mos"}, {"settings", {{"network.bandwidth", "300Mbps"}, {"compression.ratio", 0.9}}}, {"status", "done"}},
          {{"run_dir", "never-ran"},
           {"settings", {{"network.bandwidth", "10Gbps"}, {"compression.ratio", 0.9}}},
           {"status", "failed"}}}}};
    std::ofstream(root_ / "sweep" / "index.json") << index.dump(2);
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  void SetUp() override {
    work_ = root_ / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(work_);
    fs::create_directories(work_);
  }
  int lowband(const std::string& args, const std::string& env = "") { return run_lowband(args, work_, &out_, &err_, env); }
  static fs::path run(const std::string& name) { return root_ / "sweep" / name; }
  static json summary(const std::string& name) { return json::parse(slurp(run(name) / "summary.json")); }

  static fs::path root_;
  fs::path work_;
  std::string out_, err_;
};
fs::path PlotReport::root_;

const std::vector<std::string> kFigures = {"loss_vs_time",  "loss_vs_step", "val_loss_vs_time_log", "loss_vs_bytes",
                                           "tokens_per_s_vs_bandwidth", "time_to_target_vs_bandwidth"};

// "# series i: TITLE" lines of a .dat file, and each block's (x, y) points.
std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>> read_series(const fs::path& dat) {
  std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>> series;
  std::istringstream in(slurp(dat));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# series ", 0) == 0) {
      series.push_back({line.substr(line.find(": ") + 2), {}});
    } else if (!line.empty() && line[0] != '#' && !series.empty()) {
      double x = 0, y = 0;
      std::istringstream(line) >> x >> y;
      series.back().second.emplace_back(x, y);
    }
  }
  return series;
}

TEST_F(PlotReport, PlotDrawsEachFigureWithOneSeriesPerRun) {
  const fs::path out = work_ / "plots";
  ASSERT_EQ(lowband("plot " + run("fast").string() + " " + run("slow").string() + " " + run("mos").string() +
                    " --out " + out.string()),
            0)
      << err_;
  for (const std::string& figure : kFigures) {
    for (const char* ext : {".png", ".svg", ".dat", ".gp"}) {
      ASSERT_TRUE(fs::exists(out / (figure + ext))) << figure << ext;
      EXPECT_GT(fs::file_size(out / (figure + ext)), 100u) << figure << ext;
    }
    EXPECT_EQ(slurp(out / (figure + ".png")).substr(1, 3), "PNG") << figure;
    EXPECT_NE(slurp(out / (figure + ".svg")).find("<svg"), std::string::npos) << figure;
  }
  // The loss figures: a train and a validation series per run, named in the script and the SVG legend.
  const auto series = read_series(out / "loss_vs_time.dat");
  ASSERT_EQ(series.size(), 6u);
  const std::string gp = slurp(out / "loss_vs_time.gp"), svg = slurp(out / "loss_vs_time.svg");
  for (const std::string name : {"tiny-fast", "tiny-slow", "tiny-mos"}) {
    for (const std::string kind : {" train", " validation"}) {
      EXPECT_NE(gp.find("title \"" + name + kind + "\""), std::string::npos) << name << kind;
      EXPECT_NE(svg.find("<text>" + name + kind + "</text>"), std::string::npos) << name << kind;
    }
  }
  // The last train point of the fast run is its last curve.csv row (seconds here: a short run).
  const json fast = summary("fast");
  EXPECT_NEAR(series[0].second.back().first, fast.at("sim_total_seconds").get<double>(), 1e-6);
  EXPECT_NEAR(series[0].second.back().second, fast.at("final_train_loss").get<double>(), 1e-6);
  EXPECT_EQ(series[0].second.size(), size_t(fast.at("steps_done").get<int>()));
  EXPECT_NE(gp.find("simulated wall-clock time (s)"), std::string::npos);
  // Loss vs bytes: the fast run's last train point is at all its steps' bytes (all ranks).
  const auto by_bytes = read_series(out / "loss_vs_bytes.dat");
  ASSERT_EQ(by_bytes.size(), 6u);
  const double all_bytes = fast.at("bytes_sent_all_ranks_per_step").at("total").get<double>() *
                           fast.at("steps_done").get<double>();
  const std::string bytes_gp = slurp(out / "loss_vs_bytes.gp");
  const double unit = bytes_gp.find("(GB)") != std::string::npos ? 1e9 : bytes_gp.find("(MB)") != std::string::npos ? 1e6 : 1e3;
  EXPECT_GT(all_bytes, 0.0);
  EXPECT_NEAR(by_bytes[0].second.back().first * unit, all_bytes, 1e-6 * all_bytes);
  EXPECT_EQ(by_bytes[0].second.back().second, series[0].second.back().second);
}

TEST_F(PlotReport, PlotGroupsASweepByCompressionAgainstLogBandwidth) {
  ASSERT_EQ(lowband("plot " + (root_ / "sweep").string() + " --out " + (work_ / "p").string() + " --format svg"), 0)
      << err_;
  EXPECT_NE(err_.find("never-ran"), std::string::npos) << err_;  // the failed point is left out, with a note
  EXPECT_FALSE(fs::exists(work_ / "p" / "loss_vs_time.png"));     // --format svg only
  const auto series = read_series(work_ / "p" / "tokens_per_s_vs_bandwidth.dat");
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].first, "compression.ratio=0");
  EXPECT_EQ(series[1].first, "compression.ratio=0.9");
  ASSERT_EQ(series[0].second.size(), 2u);
  EXPECT_DOUBLE_EQ(series[0].second[0].first, 300e6);  // bits/s, sorted by bandwidth
  EXPECT_DOUBLE_EQ(series[0].second[1].first, 10e9);
  EXPECT_NEAR(series[0].second[1].second, summary("fast").at("sim_tokens_per_s").get<double>(), 1e-3);
  ASSERT_EQ(series[1].second.size(), 1u);
  EXPECT_NEAR(series[1].second[0].second, summary("mos").at("sim_tokens_per_s").get<double>(), 1e-3);
  const std::string gp = slurp(work_ / "p" / "tokens_per_s_vs_bandwidth.gp");
  EXPECT_NE(gp.find("set logscale x"), std::string::npos);
  EXPECT_NE(gp.find("bps"), std::string::npos);
  EXPECT_EQ(read_series(work_ / "p" / "time_to_target_vs_bandwidth.dat").size(), 2u);
}

// A run whose scenario.json has a node down (network.dynamics state) for the
// middle half of its time: loss_vs_time shades it, gnuplot draws the script.
TEST_F(PlotReport, PlotShadesOutagesOnLossVsTime) {
  const fs::path flaky = work_ / "flaky";
  fs::copy(run("slow"), flaky, fs::copy_options::recursive);
  const double total = summary("slow").at("sim_total_seconds").get<double>();
  json scenario = json::parse(slurp(flaky / "scenario.json"));
  scenario["name"] = "tiny-flaky";
  scenario["network"]["dynamics"] = {{{"node", 1}, {"state", {{"steps", {{total / 4, 0}, {3 * total / 4, 1}}}}}}};
  std::ofstream(flaky / "scenario.json") << scenario.dump(2);
  const fs::path out = work_ / "plots";
  ASSERT_EQ(lowband("plot " + run("fast").string() + " " + flaky.string() + " --out " + out.string()), 0) << err_;
  const std::string gp = slurp(out / "loss_vs_time.gp");
  EXPECT_NE(gp.find("set object 1 rect from first "), std::string::npos) << gp;
  EXPECT_NE(gp.find("fillcolor rgb \"#D55E00\""), std::string::npos) << gp;  // the second run's colour
  EXPECT_EQ(gp.find("set object 2 "), std::string::npos) << gp;
  EXPECT_NE(gp.find("keyentry"), std::string::npos) << gp;
  EXPECT_NE(slurp(out / "loss_vs_time.svg").find("network.dynamics"), std::string::npos);
  EXPECT_NE(slurp(out / "val_loss_vs_time_log.gp").find("set object 1 rect"), std::string::npos);
  EXPECT_EQ(slurp(out / "loss_vs_step.gp").find("set object"), std::string::npos);
}

// Cells of the markdown table's row whose first cell names `label`.
std::vector<std::string> table_row(const std::string& markdown, const std::string& label) {
  std::istringstream in(markdown);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `" + label + "`", 0) != 0) continue;
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream row(line.substr(1));
    while (std::getline(row, cell, '|')) cells.push_back(cell.substr(1, cell.size() - 2));
    return cells;
  }
  return {};
}

TEST_F(PlotReport, ReportTabulatesTheRunsAgainstTheFastestUncompressedOne) {
  const fs::path md = work_ / "report.md";
  ASSERT_EQ(lowband("report " + (root_ / "sweep").string() + " --out " + md.string()), 0) << err_;
  const std::string text = slurp(md);
  for (const char* column : {"seeds", "tokens/s", "(50 %)", "(75 %)", "(90 %)", "(100 %)", "final val loss",
                             "Δ final val loss vs baseline", "val perplexity", "bytes sent per step",
                             "K/V bytes saved (measured)"})
    EXPECT_NE(text.find(column), std::string::npos) << column;
  EXPECT_NE(text.find("Baseline: `tiny-fast`"), std::string::npos) << text;
  EXPECT_NE(text.find("Targets: the validation loss of `tiny-fast` at 50 %, 75 %, 90 % and 100 %"), std::string::npos)
      << text;
  const auto fast = table_row(text, "tiny-fast"), mos = table_row(text, "tiny-mos");
  ASSERT_EQ(fast.size(), 14u) << text;
  ASSERT_EQ(mos.size(), 14u) << text;
  EXPECT_EQ(fast[1], "1 (seed 1): no interval");  // one seed each: no interval invented
  EXPECT_EQ(fast[2], "10 Gbps");
  for (int t = 5; t <= 8; ++t) EXPECT_NE(fast[t].find("(1.00×)"), std::string::npos) << fast[t];  // the baseline reaches its own targets
  EXPECT_EQ(fast[10], "baseline");
  char expected[64];
  std::snprintf(expected, sizeof expected, "%.4f", summary("mos").at("final_val_loss").get<double>());
  EXPECT_EQ(mos[9], expected);
  std::snprintf(expected, sizeof expected, "%+.4f",
                summary("mos").at("final_val_loss").get<double>() - summary("fast").at("final_val_loss").get<double>());
  EXPECT_EQ(mos[10], std::string(expected) + " (1 seed a side: untested)");
  std::snprintf(expected, sizeof expected, "%.1f", 100 * summary("mos").at("kv_bytes_saved_fraction").get<double>());
  EXPECT_EQ(mos[13].substr(0, mos[13].find(' ')), expected);
  EXPECT_EQ(mos[3].rfind("compression.ratio=0.9 (K rank ", 0), 0u) << mos[3];  // the kept rank per head
  EXPECT_NE(mos[3].find(" of 16; 1 of 1 layers)"), std::string::npos) << mos[3];  // and the layers compressed
  EXPECT_TRUE(table_row(text, "never-ran").empty());
  EXPECT_FALSE(fs::exists(md.string() + ".tmp"));

  ASSERT_EQ(lowband("report " + (root_ / "sweep").string() + " --target-loss 9,8"), 0) << err_;
  EXPECT_NE(out_.find("| time to loss 9.000 | time to loss 8.000 |"), std::string::npos) << out_;
}

// `sweep --seeds N` runs each point with seeds s..s+N-1; report and plot group them
// into one arm with an interval and a band.
TEST_F(PlotReport, SweepSeedsAreOneArmWithAnIntervalAndABand) {
  const fs::path sweep = work_ / "seeds";
  ASSERT_EQ(lowband("sweep" + std::string(kTiny) + " --set name=tiny-seeds --set training.seed=5 --seeds 3 --out " +
                    sweep.string()),
            0)
      << err_;
  ASSERT_EQ(lowband("report " + sweep.string()), 0) << err_;
  const auto arm = table_row(out_, "tiny-seeds");
  ASSERT_EQ(arm.size(), 14u) << out_;
  EXPECT_EQ(arm[1], "3 (5,6,7)");
  std::vector<double> losses;
  for (int seed : {5, 6, 7})
    losses.push_back(json::parse(slurp(sweep / ("tiny-seeds-seed" + std::to_string(seed)) / "summary.json"))
                         .at("final_val_loss")
                         .get<double>());
  EXPECT_NE(losses[0], losses[1]);  // the seed changes the training
  const double mean = (losses[0] + losses[1] + losses[2]) / 3;
  char expected[64];
  std::snprintf(expected, sizeof expected, "%.4f ± ", mean);
  EXPECT_EQ(arm[9].rfind(expected, 0), 0u) << arm[9];
  size_t rows = 0;  // one row, not one per seed
  for (size_t at = out_.find("\n| `tiny-seeds"); at != std::string::npos; at = out_.find("\n| `tiny-seeds", at + 1)) ++rows;
  EXPECT_EQ(rows, 1u) << out_;

  ASSERT_EQ(lowband("plot " + sweep.string() + " --format svg --out " + (work_ / "p").string()), 0) << err_;
  const auto series = read_series(work_ / "p" / "val_loss_vs_time_seeds.dat");
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].first, "tiny-seeds (3 seeds)");
  EXPECT_EQ(series[0].second.size(), 3u);  // evaluations at steps 4, 8, 12
  EXPECT_NE(slurp(work_ / "p" / "val_loss_vs_time_seeds.gp").find("using 1:3:4 with filledcurves"), std::string::npos);

  EXPECT_EQ(lowband("sweep" + std::string(kTiny) + " --seeds 0 --out " + (work_ / "bad").string()), 2);
  EXPECT_NE(err_.find("--seeds"), std::string::npos) << err_;
  EXPECT_EQ(lowband("sweep" + std::string(kTiny) + " --seeds 2 --set training.seed=1,2 --out " + (work_ / "bad").string()), 2);
  EXPECT_NE(err_.find("--seeds: training.seed is already an axis"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(work_ / "bad"));
}

// --labels names each directory's runs: two copies of one run (one scenario
// name) as arms "a" and "b" in the table and the legends; a count that does
// not match the directories exits 2 naming the flag.
TEST_F(PlotReport, LabelsNameTheArmsOfOneScenario) {
  const fs::path copy = work_ / "copy";
  fs::copy(run("slow"), copy);
  ASSERT_EQ(lowband("report " + run("slow").string() + " " + copy.string() + " --labels a,b"), 0) << err_;
  EXPECT_EQ(table_row(out_, "a").size(), 14u) << out_;
  EXPECT_EQ(table_row(out_, "b").size(), 14u) << out_;
  EXPECT_EQ(out_.find("tiny-slow"), std::string::npos) << out_;
  ASSERT_EQ(lowband("plot " + run("slow").string() + " " + copy.string() + " --labels a,b --format svg --out " +
                    (work_ / "p").string()),
            0)
      << err_;
  const auto series = read_series(work_ / "p" / "loss_vs_step.dat");
  std::set<std::string> titles;
  for (const auto& [title, points] : series) titles.insert(title.substr(0, 2));
  EXPECT_EQ(titles, (std::set<std::string>{"a ", "b "})) << slurp(work_ / "p" / "loss_vs_step.dat").substr(0, 400);
  for (const char* cmd : {"report", "plot"}) {
    EXPECT_EQ(lowband(std::string(cmd) + " " + run("slow").string() + " " + copy.string() + " --labels a --out " +
                      (work_ / "q").string()),
              2);
    EXPECT_NE(err_.find("--labels: 1 labels for 2 directories"), std::string::npos) << err_;
    EXPECT_FALSE(fs::exists(work_ / "q"));
  }
}

TEST_F(PlotReport, ReportSaysWhenTheTimeWasProjected) {
  const fs::path projected = work_ / "projected";
  fs::copy(run("slow"), projected);
  json s = summary("slow");
  s["time_projection"] = {{"scenario", "mos-paper-decentralized-300mbps"}, {"description", "paper scale"}};
  std::ofstream(projected / "summary.json") << s.dump();
  ASSERT_EQ(lowband("report " + projected.string() + " --target-loss 99"), 0) << err_;
  EXPECT_NE(out_.find("time per step projected to mos-paper-decentralized-300mbps"), std::string::npos) << out_;
  EXPECT_NE(out_.find("Targets: given by `--target-loss`"), std::string::npos) << out_;
  ASSERT_EQ(lowband("plot " + projected.string() + " --format png"), 0) << err_;
  EXPECT_NE(slurp(projected / "plots" / "loss_vs_time.gp").find("time per step projected to mos-paper-decentralized"),
            std::string::npos);
}

TEST_F(PlotReport, BadInputExits2AndWritesNothing) {
  EXPECT_EQ(lowband("report " + (work_ / "missing").string()), 2);
  EXPECT_NE(err_.find((work_ / "missing").string()), std::string::npos) << err_;

  const fs::path broken = work_ / "broken";
  fs::copy(run("fast"), broken);
  std::ofstream(broken / "summary.json") << "{\"final_val_loss\": ";
  EXPECT_EQ(lowband("plot " + broken.string() + " --out " + (work_ / "p").string()), 2);
  EXPECT_NE(err_.find((broken / "summary.json").string()), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(work_ / "p"));

  EXPECT_EQ(lowband("plot " + run("fast").string() + " --format png,jpg --out " + (work_ / "p").string()), 2);
  EXPECT_NE(err_.find("--format"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(work_ / "p"));

  EXPECT_EQ(lowband("report " + run("fast").string() + " --baseline " + work_.string()), 2);
  EXPECT_NE(err_.find("--baseline"), std::string::npos) << err_;
  for (const char* flags : {"--target-fraction 0", "--target-fraction 0.5 --target-loss 3", "--target-loss=-1",
                            "--answer-threshold 1.5"}) {
    EXPECT_EQ(lowband("report " + run("fast").string() + " " + flags + " --out " + (work_ / "r.md").string()), 2) << flags;
    const std::string flag = std::string(flags).substr(0, std::string(flags).find_first_of(" ="));
    EXPECT_NE(err_.find(flag + ":"), std::string::npos) << err_;
    EXPECT_FALSE(fs::exists(work_ / "r.md"));
  }
}

TEST_F(PlotReport, MissingGnuplotSaysWhichPackageToInstall) {
  EXPECT_EQ(lowband("plot " + run("fast").string() + " --out " + (work_ / "p").string(),
                    "LOWBAND_GNUPLOT=" + (work_ / "no-gnuplot").string()),
            2);  // an environment the user can fix, as estimate --plot says it (it was exit 1, "a bug")
  EXPECT_NE(err_.find("gnuplot-nox"), std::string::npos) << err_;
  EXPECT_NE(err_.find("error: gnuplot: "), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(work_ / "p"));
}

}  // namespace
