// run_training on a changing network (network.dynamics): the steps run on one
// clock, each step's time lost against the nominal network is reported, and a run
// resumed from a checkpoint has exactly the numbers of the run that never stopped.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/train/run.h"
#include "tests/runtime/test_resume_support.h"

namespace lowband::train::test {
namespace {

class RunDynamics : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test_support::unique_test_temp_dir("lowband_run_dynamics"); }
  void TearDown() override { fs::remove_all(dir_); }

  RunResult run(const Scenario& s, const fs::path& out, int stop_after = -1, bool resume = false) {
    RunOptions o;
    o.out_dir = out.string();
    o.stop_after_steps = stop_after;
    o.resume = resume;
    o.replay_every = 3;  // batches that do not line up with the checkpoints
    return run_training(s, o);
  }

  static sim::TraceSpec steps(std::vector<sim::TracePoint> points) {
    sim::TraceSpec t;
    t.points = std::move(points);
    return t;
  }

  fs::path dir_;
};

TEST_F(RunDynamics, StepsRunOnOneClockAndReportTheTimeLost) {
  const Scenario constant = resume_tiny();
  run(constant, dir_ / "constant");
  const auto nominal = read_jsonl(dir_ / "constant" / "steps.jsonl");
  ASSERT_EQ(nominal.size(), 10u);
  EXPECT_FALSE(nominal[0].contains("sim_lost_seconds"));  // a constant network reports none
  // Node 1 down for 2 s from the middle of step 4.
  const double step4_start = nominal[2].at("sim_total_seconds").get<double>();
  const double step4_seconds = nominal[3].at("sim_step_seconds").get<double>();
  const double step4_mid = step4_start + 0.5 * step4_seconds;
  Scenario changing = constant;
  changing.network.dynamics = {{{sim::DynamicTarget::Kind::node, 1, -1},
                                sim::DynamicQuantity::state,
                                steps({{step4_mid, 0}, {step4_mid + 2, 1}})}};
  run(changing, dir_ / "changing");
  const auto traced = read_jsonl(dir_ / "changing" / "steps.jsonl");
  ASSERT_EQ(traced.size(), 10u);
  double clock = 0, lost = 0;
  for (size_t i = 0; i < traced.size(); ++i) {
    const double step = traced[i].at("sim_step_seconds").get<double>();
    const double lost_here = traced[i].at("sim_lost_seconds").get<double>();
    EXPECT_NEAR(lost_here, step - nominal[i].at("sim_step_seconds").get<double>(), 1e-12) << "step " << i + 1;
    if (i != 3) {
      EXPECT_NEAR(lost_here, 0, 1e-12) << "step " << i + 1;
    }
    clock += step;
    lost += lost_here;
    EXPECT_NEAR(traced[i].at("sim_total_seconds").get<double>(), clock, 1e-9);
    EXPECT_NEAR(traced[i].at("sim_lost_total_seconds").get<double>(), lost, 1e-9);
    // The network changes time, never numerics.
    EXPECT_EQ(traced[i].at("train_loss"), nominal[i].at("train_loss"));
  }
  // Step 4 waits for the node: at most the 2 s outage, at least the part of it
  // that the step's own remaining work does not cover.
  EXPECT_GT(traced[3].at("sim_lost_seconds").get<double>(), 2.0 - step4_seconds);
  EXPECT_LE(traced[3].at("sim_lost_seconds").get<double>(), 2.0 + 1e-9);
  const auto summary = nlohmann::json::parse(slurp(dir_ / "changing" / "summary.json"));
  EXPECT_NEAR(summary.at("sim_lost_seconds").get<double>(), lost, 1e-9);
  EXPECT_NEAR(summary.at("sim_nominal_total_seconds").get<double>(),
              nlohmann::json::parse(slurp(dir_ / "constant" / "summary.json")).at("sim_total_seconds").get<double>(),
              1e-9);

  // Bandwidth halved from the middle of step 7 on: steps 1-6 lose nothing, 8-10 lose time.
  changing.network.dynamics = {
      {{}, sim::DynamicQuantity::bandwidth,
       steps({{nominal[5].at("sim_total_seconds").get<double>() + 0.5 * nominal[6].at("sim_step_seconds").get<double>(),
               0.5}})}};
  run(changing, dir_ / "halved");
  const auto halved = read_jsonl(dir_ / "halved" / "steps.jsonl");
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(halved[i].at("sim_lost_seconds").get<double>(), 0, 1e-12) << i + 1;
  for (size_t i = 7; i < 10; ++i) EXPECT_GT(halved[i].at("sim_lost_seconds").get<double>(), 0) << i + 1;
}

TEST_F(RunDynamics, ResumeOnAChangingNetworkEqualsTheStraightRun) {
  Scenario s = resume_tiny();
  sim::TraceSpec walk;
  walk.kind = sim::TraceSpec::Kind::random_walk;
  walk.seed = 5;
  walk.every_s = 0.01;
  walk.sigma = 0.3;
  walk.min = 0.1;
  walk.max = 2;
  sim::TraceSpec outages;
  outages.kind = sim::TraceSpec::Kind::outages;
  outages.seed = 9;
  outages.mean_up_s = 0.2;
  outages.mean_down_s = 0.05;
  sim::TraceSpec dips = outages;  // long dips of every link: some span a checkpoint
  dips.seed = 10;
  dips.mean_up_s = 0.05;
  dips.mean_down_s = 0.05;
  dips.value = 0.2;
  s.network.dynamics = {{{}, sim::DynamicQuantity::bandwidth, walk},
                        {{}, sim::DynamicQuantity::bandwidth, dips},
                        {{sim::DynamicTarget::Kind::node, 0, -1}, sim::DynamicQuantity::state, outages}};
  const fs::path straight = dir_ / "straight", resumed = dir_ / "resumed";
  run(s, straight);
  const RunResult stopped = run(s, resumed, 6);
  ASSERT_EQ(stopped.steps_done, 6);
  const RunResult r = run(s, resumed, -1, true);
  EXPECT_EQ(r.resumed_at_step, 4);
  expect_same_numerics(straight, resumed, s.training.steps);
  const auto lines = read_jsonl(straight / "steps.jsonl");
  double lost = 0;
  for (const auto& line : lines) lost += line.at("sim_lost_seconds").get<double>();
  EXPECT_GT(lost, 0);  // the trace did change the run's time
}

TEST_F(RunDynamics, ARestartPaysTheStepsSinceTheCheckpointAndResumesExactly) {
  const Scenario constant = resume_tiny();  // a checkpoint every 4 steps
  ASSERT_EQ(constant.training.checkpoint_every, 4);
  run(constant, dir_ / "constant");
  const auto nominal = read_jsonl(dir_ / "constant" / "steps.jsonl");
  // Node 1 down from the middle of step 6 for 20 of its steps; the watchdog gives
  // up after one step's time, the relaunch takes half of one.
  const double step = nominal[5].at("sim_step_seconds").get<double>();
  const double down_at = nominal[4].at("sim_total_seconds").get<double>() + 0.5 * step;
  Scenario s = constant;
  s.network.dynamics = {{{sim::DynamicTarget::Kind::node, 1, -1},
                         sim::DynamicQuantity::state,
                         steps({{down_at, 0}, {down_at + 20 * step, 1}})}};
  run(s, dir_ / "waits");
  s.network.restart = sim::RestartPolicy{step, 0.5 * step};
  run(s, dir_ / "restarts");
  const auto waits = read_jsonl(dir_ / "waits" / "steps.jsonl");
  const auto restarts = read_jsonl(dir_ / "restarts" / "steps.jsonl");
  ASSERT_EQ(restarts.size(), 10u);
  EXPECT_FALSE(waits[5].contains("sim_restarts"));  // no policy, nothing to report
  int total = 0;
  for (size_t i = 0; i < restarts.size(); ++i) {
    const int here = restarts[i].at("sim_restarts").get<int>();
    total += here;
    if (i != 5) {
      EXPECT_EQ(here, 0) << "step " << i + 1;
    }
    EXPECT_EQ(restarts[i].at("train_loss"), nominal[i].at("train_loss"));  // time only, never numerics
  }
  // Each attempt from a relaunch stalls at once (the node is still down) and gives
  // up a timeout later: 20 steps of outage hold about 20 / 1.5 attempts.
  const int restarts_of_6 = restarts[5].at("sim_restarts").get<int>();
  EXPECT_GE(restarts_of_6, 12);
  EXPECT_LE(restarts_of_6, 15);
  // Once the node is back, the run redoes step 5 (the last checkpoint was after
  // step 4) and then step 6 whole: more than the run that waited, which finishes
  // step 6's remaining half.
  const double lost_restarting = restarts[5].at("sim_lost_seconds").get<double>();
  const double lost_waiting = waits[5].at("sim_lost_seconds").get<double>();
  EXPECT_GT(lost_restarting, lost_waiting + nominal[4].at("sim_step_seconds").get<double>());
  const auto summary = nlohmann::json::parse(slurp(dir_ / "restarts" / "summary.json"));
  EXPECT_EQ(summary.at("sim_restarts").get<int>(), total);

  // Stopped after step 6 and resumed from the checkpoint at step 4: the restarts
  // replay again from there, to the same numbers.
  const RunResult stopped = run(s, dir_ / "resumed", 6);
  ASSERT_EQ(stopped.steps_done, 6);
  EXPECT_EQ(run(s, dir_ / "resumed", -1, true).resumed_at_step, 4);
  expect_same_numerics(dir_ / "restarts", dir_ / "resumed", s.training.steps);
}

}  // namespace
}  // namespace lowband::train::test
