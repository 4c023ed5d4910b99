// One training timed on several networks (RunOptions::also_timed_on): every
// target's run directory carries the trained run's losses, and its simulated
// time equals a run trained on that network alone.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "runtime/scenario/load.h"
#include "runtime/train/run.h"
#include "tests/runtime/test_run_support.h"

namespace lowband::train::test {
namespace {

class RunRetime : public RunDirTest {};

TEST_F(RunRetime, EachNetworkGetsTheSameLossesAndItsOwnTime) {
  const Scenario slow = tiny_run_scenario({"network.bandwidth=80Mbps"});
  const Scenario fast = tiny_run_scenario({"network.bandwidth=10Gbps", "name=fast"});
  RunOptions options;
  options.out_dir = (dir_ / "slow").string();
  options.also_timed_on.push_back({fast, (dir_ / "fast").string()});
  const RunResult r = run_training(slow, options);
  ASSERT_EQ(r.retimed.size(), 1u);
  EXPECT_EQ(r.retimed[0].run_dir, (dir_ / "fast").string());

  const auto a = read_jsonl(dir_ / "slow" / "steps.jsonl");
  const auto b = read_jsonl(dir_ / "fast" / "steps.jsonl");
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].at("train_loss"), b[i].at("train_loss")) << "step " << i + 1;
    EXPECT_EQ(a[i].value("val_loss", -1.0), b[i].value("val_loss", -1.0)) << "step " << i + 1;
    EXPECT_GT(a[i].at("sim_step_seconds").get<double>(), b[i].at("sim_step_seconds").get<double>());
  }
  // Each directory holds its own scenario.
  std::ifstream fast_scenario(dir_ / "fast" / "scenario.json");
  EXPECT_EQ(nlohmann::json::parse(fast_scenario), to_json(fast));

  // The retimed figures equal a run trained on the fast network alone.
  RunOptions alone;
  alone.out_dir = (dir_ / "alone").string();
  const RunResult f = run_training(fast, alone);
  EXPECT_DOUBLE_EQ(f.sim_total_seconds, r.retimed[0].sim_total_seconds);
  EXPECT_EQ(f.summary.at("final_val_loss"), r.retimed[0].summary.at("final_val_loss"));
  EXPECT_LT(r.retimed[0].sim_total_seconds, r.sim_total_seconds);
}

TEST_F(RunRetime, ATargetThatTrainsDifferentlyIsRejected) {
  RunOptions options;
  options.out_dir = (dir_ / "a").string();
  options.also_timed_on.push_back({tiny_run_scenario({"training.lr=0.02"}), (dir_ / "b").string()});
  try {
    run_training(tiny_run_scenario(), options);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("training.lr"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "a"));  // nothing written
}

}  // namespace
}  // namespace lowband::train::test

namespace lowband::train::test {
namespace {

TEST_F(RunRetime, AFreshRunRefusesAnotherRunsDirectory) {
  RunOptions options;
  options.out_dir = (dir_ / "a").string();
  run_training(tiny_run_scenario(), options);
  const std::string steps_before = slurp(dir_ / "a" / "steps.jsonl");
  try {
    run_training(tiny_run_scenario(), options);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("already holds a run"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--resume"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(dir_ / "a" / "steps.jsonl"), steps_before);  // no second run's rows
  // A retime target's directory is checked too, before anything is written.
  RunOptions other;
  other.out_dir = (dir_ / "b").string();
  other.also_timed_on.push_back({tiny_run_scenario({"name=a"}), (dir_ / "a").string()});
  EXPECT_THROW(run_training(tiny_run_scenario(), other), InputError);
  EXPECT_FALSE(fs::exists(dir_ / "b"));
  // An empty directory made beforehand is fine.
  fs::create_directories(dir_ / "empty");
  options.out_dir = (dir_ / "empty").string();
  EXPECT_NO_THROW(run_training(tiny_run_scenario(), options));
}

}  // namespace
}  // namespace lowband::train::test
