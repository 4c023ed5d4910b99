// `lowband sweep` end to end on a tiny scenario: 2 bandwidths x 2 compression
// ratios give 4 run directories from 2 trainings (one per ratio), equal losses
// across networks, less simulated time on the faster one; --jobs 2 gives what
// --jobs 1 gives; a rerun skips finished points; a failing point fails alone;
// bad values are errors naming the flag and point; the sweep-section form.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "tests/slurp.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lowband::test_support::slurp;

json read_json(const fs::path& path) { return json::parse(slurp(path)); }

std::vector<double> train_losses(const fs::path& run_dir) {
  std::vector<double> losses;
  std::ifstream in(run_dir / "steps.jsonl");
  for (std::string line; std::getline(in, line);) losses.push_back(json::parse(line).at("train_loss").get<double>());
  return losses;
}

// Profile timing: simulated times do not depend on how busy this CPU is.
const std::string kTiny =
    " --set model.layers=2 --set model.d_model=32 --set model.heads=4 --set model.kv_heads=2"
    " --set model.ffn_hidden=64 --set model.seq_len=64 --set parallel.context=2 --set network.nodes=2"
    " --set devices.timing=profile --set compression.method=mos --set compression.warmup_steps=1"
    " --set compression.fit_during_lr_warmup=true"
    " --set training.checkpoint_every=0 --threads 1";
const std::string kGrid = " --set network.bandwidth=80Mbps,10Gbps --set compression.ratio=0,0.9 --steps 3";

struct Output {
  int status;
  std::string out, err;
};

Output lowband(const std::string& args, const fs::path& scratch) {
  const std::string cmd = std::string(LOWBAND_BINARY) + " " + args + " >" + (scratch / "stdout").string() + " 2>" +
                          (scratch / "stderr").string();
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(scratch / "stdout"), slurp(scratch / "stderr")};
}

class SweepCli : public ::testing::Test {
 protected:
  // One sweep (4 points, 2 trainings, --jobs 1) shared by the tests that read it.
  static void SetUpTestSuite() {
    // Per process: ctest runs each test in its own process, several at once.
    root_ = fs::temp_directory_path() / ("lowband_sweep_cli_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    first_ = lowband("sweep" + kTiny + kGrid + " --jobs 1 --out " + (root_ / "a").string(), root_);
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }
  void SetUp() override {
    scratch_ = root_ / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::create_directories(scratch_);
  }
  static fs::path root_;
  static Output first_;
  fs::path scratch_;
};
fs::path SweepCli::root_;
Output SweepCli::first_;

TEST_F(SweepCli, FourPointsFromTwoTrainings) {
  ASSERT_EQ(first_.status, 0) << first_.out << first_.err;
  const json index = read_json(root_ / "a" / "index.json");
  EXPECT_EQ(index.at("sweep"), "quickstart");
  EXPECT_EQ(index.at("axes").at("network.bandwidth"), json({"80Mbps", "10Gbps"}));
  EXPECT_EQ(index.at("axes").at("compression.ratio"), json({0, 0.9}));
  const json& points = index.at("points");
  ASSERT_EQ(points.size(), 4u);
  std::map<double, std::set<std::string>> trained_in_by_ratio;
  for (const json& p : points) {
    EXPECT_EQ(p.at("status"), "done") << p.dump();
    EXPECT_EQ(p.at("message"), "");
    const fs::path run = root_ / "a" / p.at("run_dir").get<std::string>();
    for (const char* f : {"scenario.json", "steps.jsonl", "curve.csv", "summary.json"}) EXPECT_TRUE(fs::exists(run / f)) << run / f;
    EXPECT_EQ(read_json(run / "scenario.json").at("name"), p.at("run_dir"));
    trained_in_by_ratio[p.at("settings").at("compression.ratio").get<double>()].insert(p.at("trained_in"));
  }
  // One training per ratio, shared by both bandwidths.
  ASSERT_EQ(trained_in_by_ratio.size(), 2u);
  EXPECT_EQ(trained_in_by_ratio[0].size(), 1u);
  EXPECT_EQ(trained_in_by_ratio[0.9].size(), 1u);
  EXPECT_NE(*trained_in_by_ratio[0].begin(), *trained_in_by_ratio[0.9].begin());
  EXPECT_EQ(index.at("trainings"), 2);
  // One line per training's start and finish.
  EXPECT_NE(first_.out.find("group 1/2 started"), std::string::npos) << first_.out;
  EXPECT_NE(first_.out.find("group 2/2 done"), std::string::npos) << first_.out;
  EXPECT_NE(first_.out.find("| quickstart-bw10Gbps-r0.9 | done |"), std::string::npos) << first_.out;
}

TEST_F(SweepCli, LossesFollowTheRatioAndTimeTheNetwork) {
  ASSERT_EQ(first_.status, 0) << first_.err;
  const fs::path a = root_ / "a";
  for (const char* r : {"r0", "r0.9"}) {
    const fs::path slow = a / (std::string("quickstart-bw80Mbps-") + r), fast = a / (std::string("quickstart-bw10Gbps-") + r);
    const std::vector<double> slow_losses = train_losses(slow);
    ASSERT_EQ(slow_losses.size(), 3u) << r;
    EXPECT_EQ(slow_losses, train_losses(fast)) << r;
    const json s = read_json(slow / "summary.json"), f = read_json(fast / "summary.json");
    EXPECT_EQ(s.at("final_val_loss"), f.at("final_val_loss")) << r;
    EXPECT_GT(s.at("sim_total_seconds").get<double>(), f.at("sim_total_seconds").get<double>()) << r;
  }
  // The ratio took effect: 0 sends K/V whole; 0.9 compresses after the 1-step warm-up.
  EXPECT_EQ(read_json(a / "quickstart-bw80Mbps-r0" / "summary.json").at("kv_bytes_ratio").get<double>(), 1.0);
  EXPECT_LT(read_json(a / "quickstart-bw80Mbps-r0.9" / "summary.json").at("kv_bytes_ratio").get<double>(), 0.9);
  EXPECT_NE(train_losses(a / "quickstart-bw80Mbps-r0").back(), train_losses(a / "quickstart-bw80Mbps-r0.9").back());
}

TEST_F(SweepCli, TwoJobsGiveWhatOneJobGives) {
  ASSERT_EQ(first_.status, 0) << first_.err;
  const Output two = lowband("sweep" + kTiny + kGrid + " --jobs 2 --out " + (scratch_ / "b").string(), scratch_);
  ASSERT_EQ(two.status, 0) << two.out << two.err;
  EXPECT_NE(two.out.find("2 at a time"), std::string::npos) << two.out;
  EXPECT_EQ(read_json(scratch_ / "b" / "index.json"), read_json(root_ / "a" / "index.json"));
  const json index = read_json(root_ / "a" / "index.json");  // a loop over a temporary's member reads freed memory (ASan)
  for (const json& p : index.at("points")) {
    const std::string run = p.at("run_dir");
    EXPECT_EQ(train_losses(scratch_ / "b" / run), train_losses(root_ / "a" / run)) << run;
    EXPECT_EQ(read_json(scratch_ / "b" / run / "summary.json").at("sim_total_seconds"),
              read_json(root_ / "a" / run / "summary.json").at("sim_total_seconds"))
        << run;
  }
}

TEST_F(SweepCli, RerunSkipsFinishedPointsAndRunsNewOnes) {
  ASSERT_EQ(first_.status, 0) << first_.err;
  const fs::path copy = scratch_ / "a";
  fs::copy(root_ / "a", copy, fs::copy_options::recursive);
  const auto written = fs::last_write_time(copy / "quickstart-bw80Mbps-r0" / "summary.json");
  const Output again = lowband("sweep --resume " + copy.string(), scratch_);
  ASSERT_EQ(again.status, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("4 points already done"), std::string::npos) << again.out;
  EXPECT_EQ(again.out.find("started"), std::string::npos) << again.out;
  EXPECT_EQ(fs::last_write_time(copy / "quickstart-bw80Mbps-r0" / "summary.json"), written);
  // A third bandwidth into the same directory: only its points train (one per ratio).
  const Output more = lowband("sweep" + kTiny + " --set network.bandwidth=80Mbps,10Gbps,1Gbps --set compression.ratio=0,0.9"
                              " --steps 3 --out " + copy.string(), scratch_);
  ASSERT_EQ(more.status, 0) << more.out << more.err;
  EXPECT_NE(more.out.find("(4 points already done)"), std::string::npos) << more.out;
  const json index = read_json(copy / "index.json");
  ASSERT_EQ(index.at("points").size(), 6u);
  for (const json& p : index.at("points")) EXPECT_EQ(p.at("status"), "done") << p.dump();
  EXPECT_EQ(fs::last_write_time(copy / "quickstart-bw80Mbps-r0" / "summary.json"), written);
  EXPECT_EQ(train_losses(copy / "quickstart-bw1Gbps-r0.9"), train_losses(copy / "quickstart-bw80Mbps-r0.9"));
}

// --status reads the directory alone: a point whose training directory a writer
// holds is running (step k/N from its summary), one with steps done and no writer
// is stopped (resumable), a failed one says why; its networks follow it.
TEST_F(SweepCli, StatusSaysWhereEachPointStands) {
  ASSERT_EQ(first_.status, 0) << first_.err;
  const fs::path copy = scratch_ / "a";
  fs::copy(root_ / "a", copy, fs::copy_options::recursive);
  Output r = lowband("sweep --status " + copy.string(), scratch_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("4 points, 2 trainings; 4 done, 0 running"), std::string::npos) << r.out;
  // The ratio-0 training (both bandwidths) back to pending, its directory held by a writer;
  // the ratio-0.9 one failed.
  json index = read_json(copy / "index.json");
  std::string trainer;
  for (json& p : index.at("points")) {
    const bool plain = p.at("settings").at("compression.ratio") == 0;
    p["status"] = plain ? "pending" : "failed";
    if (!plain) p["message"] = "training failed\nsomething went wrong";
    if (plain && trainer.empty()) trainer = p.at("run_dir").get<std::string>();
  }
  std::ofstream(copy / "index.json") << index.dump();
  const int fd = ::open((copy / trainer / ".lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  r = lowband("sweep --status " + copy.string(), scratch_);
  ::close(fd);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("0 done, 2 running, 2 failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(trainer + " "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("running, step 3/3\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("failed: something went wrong"), std::string::npos) << r.out;
  r = lowband("sweep --status " + copy.string(), scratch_);  // the writer gone: stopped, resumable
  EXPECT_NE(r.out.find("2 stopped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lowband sweep --resume " + copy.string()), std::string::npos) << r.out;
  for (const std::string& bad : {"sweep --status " + scratch_.string(), "sweep --status " + copy.string() + " --jobs 2"}) {
    const Output e = lowband(bad, scratch_);
    EXPECT_EQ(e.status, 2) << bad << "\n" << e.err;
    EXPECT_NE(e.err.find("--status"), std::string::npos) << e.err;
  }
}

TEST_F(SweepCli, AFailingTrainingFailsOnlyItsPoints) {
  const Output r = lowband("sweep" + kTiny + " --set 'training.data=\"\",/nonexistent/corpus.txt'"
                           " --set network.bandwidth=80Mbps,1Gbps --set compression.ratio=0.5"
                           " --steps 2 --jobs 2 --out " + (scratch_ / "s").string(), scratch_);
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("2 of 4 points failed"), std::string::npos) << r.err;
  const json index = read_json(scratch_ / "s" / "index.json");
  int done = 0, failed = 0;
  for (const json& p : index.at("points")) {
    const bool bad = p.at("settings").at("training.data") != "";
    EXPECT_EQ(p.at("status"), bad ? "failed" : "done") << p.dump();
    if (bad) {
      EXPECT_NE(p.at("message").get<std::string>().find("/nonexistent/corpus.txt"), std::string::npos) << p.dump();
    }
    (bad ? failed : done)++;
  }
  EXPECT_EQ(done, 2);
  EXPECT_EQ(failed, 2);
}

TEST_F(SweepCli, BadValueNamesTheFlagAndPointAndWritesNothing) {
  const Output r = lowband("sweep" + kTiny + " --set compression.ratio=0,1.5 --out " + (scratch_ / "x").string(), scratch_);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--set compression.ratio=0,1.5 at point quickstart-r1.5"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(scratch_ / "x"));
  EXPECT_EQ(lowband("sweep" + kTiny + " --jobs 0 --out " + (scratch_ / "x").string(), scratch_).status, 2);
  EXPECT_FALSE(fs::exists(scratch_ / "x"));
}

TEST_F(SweepCli, SweepSectionFileIsASweepNotARun) {
  std::string text = slurp(fs::path(LOWBAND_SOURCE_DIR) / "scenarios" / "quickstart.json");
  text = text.substr(0, text.rfind('}')) + ",\n  \"sweep\": {\"network.bandwidth\": [\"80Mbps\", \"1Gbps\"]}\n}\n";
  const fs::path file = scratch_ / "grid.json";
  std::ofstream(file) << text;
  const Output dry = lowband("sweep " + file.string() + " --dry-run", scratch_);
  ASSERT_EQ(dry.status, 0) << dry.err;
  EXPECT_NE(dry.out.find("2 points, 1 trainings"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("point quickstart-bw1Gbps: network.bandwidth=1Gbps"), std::string::npos) << dry.out;
  for (const char* cmd : {"run ", "validate "}) {
    const Output r = lowband(cmd + file.string(), scratch_);
    EXPECT_EQ(r.status, 2) << cmd;
    EXPECT_NE(r.err.find("sweep: a sweep section makes this file a grid of scenarios"), std::string::npos) << r.err;
  }
}

}  // namespace
