// Projected timing (Scenario::projection, runtime/train/projection.h): a small
// run's steps take the simulated seconds `estimate` gives for the projected
// scenario — uncompressed during a MoS warm-up, compressed after it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "runtime/estimate/estimate.h"
#include "runtime/scenario/equal.h"
#include "runtime/scenario/load.h"
#include "runtime/train/run.h"
#include "tests/runtime/test_run_support.h"

namespace lowband::train::test {
namespace {

std::string error_of(const std::vector<std::string>& sets) {
  try {
    tiny_run_scenario(sets);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

class RunProjection : public RunDirTest {};

TEST_F(RunProjection, StepsTakeTheProjectedScenariosEstimatedTime) {
  const Scenario s = tiny_run_scenario({"projection.scenario=mos-paper-centralized-100gbps"});
  ASSERT_TRUE(s.projection.scenario);
  const Estimate paper = estimate(builtin_scenario("mos-paper-centralized-100gbps"));
  RunOptions options;
  options.out_dir = dir_.string();
  const RunResult r = run_training(s, options);
  const auto steps = read_jsonl(dir_ / "steps.jsonl");
  ASSERT_EQ(steps.size(), 4u);
  for (const auto& step : steps) EXPECT_DOUBLE_EQ(step.at("sim_step_seconds").get<double>(), paper.step_seconds);
  EXPECT_DOUBLE_EQ(r.sim_total_seconds, 4 * paper.step_seconds);
  // Throughput is the projected scenario's: its tokens over its step time.
  EXPECT_NEAR(r.summary.at("sim_tokens_per_s").get<double>(), paper.tokens_per_s, 1e-9 * paper.tokens_per_s);
  EXPECT_EQ(r.summary.at("time_projection").at("scenario"), "mos-paper-centralized-100gbps");
  // The projected step's physical bound, and none of the small run's own.
  EXPECT_GT(r.summary.at("time_projection").at("bound").at("bound_seconds").get<double>(), 0.0);
  EXPECT_FALSE(r.summary.contains("bound_last_step"));
}

TEST_F(RunProjection, WarmUpStepsTakeTheUncompressedTime) {
  const Scenario s = tiny_run_scenario({"compression.method=mos", "compression.k_rank=1", "compression.v_rank=2",
                           "compression.warmup_steps=2", "projection.scenario=mos-paper-mos-300mbps"});
  Scenario paper_plain = builtin_scenario("mos-paper-mos-300mbps");
  const Estimate compressed = estimate(paper_plain);
  paper_plain.compression.method = CompressionMethod::none;
  const Estimate uncompressed = estimate(paper_plain);
  ASSERT_GT(uncompressed.step_seconds, 2 * compressed.step_seconds);
  RunOptions options;
  options.out_dir = dir_.string();
  run_training(s, options);
  const auto steps = read_jsonl(dir_ / "steps.jsonl");
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_DOUBLE_EQ(steps[0].at("sim_step_seconds").get<double>(), uncompressed.step_seconds);
  EXPECT_DOUBLE_EQ(steps[1].at("sim_step_seconds").get<double>(), uncompressed.step_seconds);
  EXPECT_DOUBLE_EQ(steps[2].at("sim_step_seconds").get<double>(), compressed.step_seconds);
  EXPECT_DOUBLE_EQ(steps[3].at("sim_step_seconds").get<double>(), compressed.step_seconds);
}

TEST_F(RunProjection, OneTrainingTimedOnTwoProjections) {
  // The centralized and the uncompressed decentralized runs of the Figure 2
  // reproduction train identically: one training, two projected timings.
  const Scenario central = tiny_run_scenario({"projection.scenario=mos-paper-centralized-100gbps"});
  const Scenario decentral = tiny_run_scenario({"projection.scenario=mos-paper-decentralized-300mbps", "name=decentral"});
  RunOptions options;
  options.out_dir = (dir_ / "central").string();
  options.also_timed_on.push_back({decentral, (dir_ / "decentral").string()});
  const RunResult r = run_training(central, options);
  ASSERT_EQ(r.retimed.size(), 1u);
  const double slow = estimate(builtin_scenario("mos-paper-decentralized-300mbps")).step_seconds;
  EXPECT_DOUBLE_EQ(r.retimed[0].sim_total_seconds, 4 * slow);
  EXPECT_EQ(r.retimed[0].summary.at("time_projection").at("scenario"), "mos-paper-decentralized-300mbps");
  EXPECT_EQ(r.retimed[0].summary.at("final_val_loss"), r.summary.at("final_val_loss"));
}

TEST(ScenarioProjection, RoundTripsInlineAndComparesByContent) {
  const Scenario s = tiny_run_scenario({"projection.scenario=mos-paper-mos-300mbps"});
  const nlohmann::json j = to_json(s);
  ASSERT_TRUE(j.at("projection").at("scenario").is_object());  // written inline
  const Scenario back = parse_scenario(j, "round-trip");
  EXPECT_EQ(scenario_difference(s, back), "");
  nlohmann::json deeper = to_json(builtin_scenario("mos-paper-mos-300mbps"));
  deeper["model"]["layers"] = 4;
  const Scenario other = tiny_run_scenario({"projection.scenario=" + deeper.dump()});
  EXPECT_NE(scenario_difference(s, other).find("projection.scenario.model.layers"), std::string::npos)
      << scenario_difference(s, other);
  EXPECT_NE(scenario_difference(s, tiny_run_scenario()).find("projection.scenario"), std::string::npos);
}

TEST(ScenarioProjection, ErrorsNameThePlace) {
  EXPECT_NE(error_of({"projection.scenario=no-such"}).find("projection.scenario"), std::string::npos);
  EXPECT_NE(error_of({"projection.scenario=no-such"}).find("no built-in scenario"), std::string::npos);
  EXPECT_NE(error_of({"projection.scenario=3"}).find("expected a built-in scenario name"), std::string::npos);
  EXPECT_NE(error_of({"projection.nope=1"}).find("unknown key \"nope\""), std::string::npos);
  const std::string inline_error = error_of({"projection.scenario={\"name\":\"x\"}"});
  EXPECT_NE(inline_error.find("projection.scenario"), std::string::npos) << inline_error;
  EXPECT_NE(inline_error.find("model"), std::string::npos) << inline_error;
}

}  // namespace
}  // namespace lowband::train::test
