// run_training with RunOptions::resume: a run stopped as if killed (steps written
// past its last checkpoint, RunOptions::stop_after_steps) and resumed has exactly
// the numbers of the run that never stopped — uncompressed, MoS with the warm-up
// ending before the checkpoint, at it, and after it, sparse weight sync, pipeline
// stages with context ranks under topk_grad (their error buffers), and a retime
// target — and resuming a finished run trains nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/train/checkpoint.h"
#include "runtime/train/run.h"
#include "tests/runtime/test_resume_support.h"

namespace lowband::train::test {
namespace {

class Resume : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_support::unique_test_temp_dir("lowband_resume");
  }
  void TearDown() override { fs::remove_all(dir_); }

  RunResult run(const Scenario& s, const fs::path& out, int stop_after = -1, bool resume = false,
                std::vector<RetimeTarget> retimes = {}) {
    RunOptions o;
    o.out_dir = out.string();
    o.stop_after_steps = stop_after;
    o.resume = resume;
    o.replay_every = 3;  // replay batches that do not line up with the checkpoints
    o.also_timed_on = std::move(retimes);
    return run_training(s, o);
  }

  // Straight run vs stopped at `stop_after` then resumed: the same numbers.
  void check_resume_equals_straight(const Scenario& s, int stop_after, int expected_restart) {
    const fs::path straight = dir_ / "straight", resumed = dir_ / "resumed";
    run(s, straight);
    const RunResult stopped = run(s, resumed, stop_after);
    ASSERT_EQ(stopped.steps_done, stop_after);
    // Like a kill: lines past the checkpoint are there before the resume.
    ASSERT_EQ(int(read_jsonl(resumed / "steps.jsonl").size()), stop_after);
    const RunResult r = run(s, resumed, -1, true);
    EXPECT_EQ(r.resumed_at_step, expected_restart);
    EXPECT_FALSE(r.already_complete);
    EXPECT_EQ(r.steps_done, s.training.steps);
    expect_same_numerics(straight, resumed, s.training.steps);
  }

  fs::path dir_;
};

TEST_F(Resume, Uncompressed) { check_resume_equals_straight(resume_tiny(), 6, 4); }

TEST_F(Resume, TwoCheckpointsBeforeTheStop) { check_resume_equals_straight(resume_tiny(), 9, 8); }

TEST_F(Resume, MosWarmupEndsBeforeTheCheckpoint) {
  check_resume_equals_straight(
      resume_tiny({"compression.method=mos", "compression.k_rank=2", "compression.v_rank=4",
                   "compression.warmup_steps=2"}),
      7, 4);
}

// Checkpoint at step 3 = the end of a 3-step warm-up, with an evaluation in that last
// warm-up step: the Gram sums (of the training and the evaluation blocks) are taken,
// U0 is fitted only in the resumed process.
TEST_F(Resume, MosCheckpointAtTheWarmupEnd) {
  check_resume_equals_straight(
      resume_tiny({"compression.method=mos", "compression.k_rank=2", "compression.v_rank=4",
                   "compression.warmup_steps=3", "training.checkpoint_every=3"}),
      5, 3);
}

TEST_F(Resume, MosCheckpointInsideTheWarmup) {
  check_resume_equals_straight(
      resume_tiny({"compression.method=mos", "compression.k_rank=2", "compression.v_rank=4",
                   "compression.warmup_steps=6"}),
      5, 4);
}

// DiLoCo replicas whose exchange runs beside the inner steps (delay_steps): the
// checkpoint after step 4 falls with round 0's exchange in flight (issued after
// step 3, merged after step 6; it closes the window there, in both runs), the
// one after step 8 with round 2's staged; mixing keeps half the local weights.
TEST_F(Resume, DilocoExchangeInFlightAtTheCheckpoint) {
  for (const char* sync : {R"({"method": "diloco", "inner_steps": 3, "delay_steps": 3})",
                           R"({"method": "diloco", "inner_steps": 3, "delay_steps": 3, "eager": true})",
                           R"({"method": "diloco", "inner_steps": 3, "delay_steps": 2, "local_weight": 0.5})"}) {
    SCOPED_TRACE(sync);
    check_resume_equals_straight(
        resume_tiny({"parallel.context=1", "parallel.data=2", std::string("parallel.data_sync=") + sync}), 6, 4);
    fs::remove_all(dir_ / "straight");
    fs::remove_all(dir_ / "resumed");
  }
}

// Partial participation: node 2 computes at a quarter speed, so its replica
// misses every round (deadline 0). Stopped after step 5 and resumed from the
// checkpoint after step 3, the run decides the same rounds and trains the same.
TEST_F(Resume, PartialParticipationDropsTheSameReplicas) {
  Scenario s = resume_tiny({"parallel.context=1", "parallel.data=3", "network.nodes=3", "training.batch_size=3",
                            "training.checkpoint_every=3", "training.steps=9",
                            R"(parallel.data_sync={"method": "diloco", "inner_steps": 3, "deadline_seconds": 0})",
                            R"(network.dynamics=[{"node": 2, "speed": {"steps": [["0s", 0.25]]}}])"});
  check_resume_equals_straight(s, 5, 3);
  const auto steps = read_jsonl(dir_ / "resumed" / "steps.jsonl");
  for (int i : {2, 5, 8}) EXPECT_EQ(steps[size_t(i)].at("round_late_replicas"), nlohmann::json::array({2}));
}

TEST_F(Resume, SparseWeightSync) {
  check_resume_equals_straight(resume_tiny({"parallel.context=4", "compression.weight_sync=sparse",
                                            "compression.sync_every=3", "compression.sync_fraction=0.2"}),
                               7, 4);
}

// 2 stages x 2 context ranks: each stage's error buffers (its own layers') come back.
TEST_F(Resume, PipelineContextTopkGradWeightSync) {
  check_resume_equals_straight(resume_tiny({"parallel.pipeline=2", "model.tie_embeddings=false",
                                            "compression.weight_sync=topk_grad", "compression.sync_fraction=0.05"}),
                               6, 4);
}

// One training timed on a second network: both directories continue; the retime
// target comes back from the checkpoint when the resume names none.
TEST_F(Resume, RetimeTargetsContinueToo) {
  const Scenario s = resume_tiny();
  Scenario slow = resume_tiny({"network.bandwidth=10Mbps"});
  slow.name = "slow";
  run(s, dir_ / "straight", -1, false, {{slow, (dir_ / "straight_slow").string()}});
  run(s, dir_ / "resumed", 6, false, {{slow, (dir_ / "resumed_slow").string()}});
  const RunResult r = run(s, dir_ / "resumed", -1, true);
  ASSERT_EQ(r.retimed.size(), 1u);
  EXPECT_EQ(r.resumed_at_step, 4);
  expect_same_numerics(dir_ / "straight", dir_ / "resumed", 10);
  expect_same_numerics(dir_ / "straight_slow", dir_ / "resumed_slow", 10);
  // The two networks give different times, or the second check proves little.
  EXPECT_NE(read_jsonl(dir_ / "resumed_slow" / "steps.jsonl").back().at("sim_total_seconds"),
            read_jsonl(dir_ / "resumed" / "steps.jsonl").back().at("sim_total_seconds"));
}

TEST_F(Resume, AFinishedRunSaysSoAndWritesNothing) {
  const Scenario s = resume_tiny();
  const RunResult first = run(s, dir_);
  const std::string steps = slurp(dir_ / "steps.jsonl"), summary = slurp(dir_ / "summary.json");
  const auto written = fs::last_write_time(dir_ / "summary.json");
  const RunResult again = run(s, dir_, -1, true);
  EXPECT_TRUE(again.already_complete);
  EXPECT_EQ(again.steps_done, 10);
  EXPECT_EQ(again.final_train_loss, first.final_train_loss);
  EXPECT_EQ(slurp(dir_ / "steps.jsonl"), steps);
  EXPECT_EQ(slurp(dir_ / "summary.json"), summary);
  EXPECT_EQ(fs::last_write_time(dir_ / "summary.json"), written);
  // The final checkpoint keeps totals only: far smaller than one with the trainer's state.
  const Checkpoint c = read_checkpoint(checkpoint_path(dir_.string()));
  EXPECT_TRUE(c.complete);
  EXPECT_TRUE(c.trainer_state.empty());
}

// A directory with a scenario but no step yet (killed before the first replay):
// resuming starts from step 0.
TEST_F(Resume, NoStepYetStartsFromTheBeginning) {
  const Scenario s = resume_tiny();
  run(s, dir_ / "straight");
  fs::create_directories(dir_ / "resumed");
  std::ofstream(dir_ / "resumed" / "scenario.json") << to_json(s).dump(2) << "\n";
  const RunResult r = run(s, dir_ / "resumed", -1, true);
  EXPECT_EQ(r.resumed_at_step, 0);
  expect_same_numerics(dir_ / "straight", dir_ / "resumed", 10);
}

TEST_F(Resume, CheckpointEveryZeroWritesNone) {
  run(resume_tiny({"training.checkpoint_every=0"}), dir_);
  EXPECT_FALSE(fs::exists(dir_ / "checkpoint.bin"));
  EXPECT_EQ(read_jsonl(dir_ / "steps.jsonl").size(), 10u);
}

}  // namespace
}  // namespace lowband::train::test
