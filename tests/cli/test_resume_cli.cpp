// `lowband run --resume RUN_DIR` end to end: a run killed with SIGKILL after a
// checkpoint and resumed ends with the numbers of a run never killed; a scenario
// that disagrees with RUN_DIR/scenario.json, --out with --resume, a missing
// directory and a damaged checkpoint exit 2 and change nothing; a finished run
// says so and exits 0.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "runtime/scenario/load.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/run.h"
#include "tests/runtime/test_resume_support.h"

namespace lowband::train::test {
namespace {

// 80 steps; replays every 20 steps and at each checkpoint (every 25): steps.jsonl
// holds 45 lines from step 45 until the checkpoint at 50, and the run goes on to 80,
// time enough to kill it there.
const std::vector<std::string> kTiny = tiny_run_args(80);

class ResumeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_support::unique_test_temp_dir("lowband_resume_cli");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Starts `lowband run ARGS...` with stdout and stderr to files; returns its pid.
  pid_t start(std::vector<std::string> args) {
    return start_lowband_run(std::move(args), {}, (dir_ / "stdout").string(), (dir_ / "stderr").string());
  }
  int finish(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    out_ = slurp(dir_ / "stdout");
    err_ = slurp(dir_ / "stderr");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  int run(std::vector<std::string> args) { return finish(start(std::move(args))); }
  std::vector<std::string> tiny_into(const fs::path& out) {
    std::vector<std::string> a = kTiny;
    a.insert(a.end(), {"--out", out.string()});
    return a;
  }

  fs::path dir_;
  std::string out_, err_;
};

TEST_F(ResumeCli, KilledRunResumesToTheSameNumbers) {
  const fs::path straight = dir_ / "straight";
  ASSERT_EQ(run(tiny_into(straight)), 0) << err_;

  // Kill once a checkpoint exists and replayed steps follow it (or, on a slow
  // machine, at least a checkpoint is there). From there the run ends in ~0.1 s: a
  // test process descheduled that long (a loaded machine, ctest -j) sees the run
  // reach its final checkpoint first, so then it tries again in a fresh directory.
  fs::path killed;
  Checkpoint at_kill;
  for (int attempt = 1;; ++attempt) {
    killed = dir_ / ("killed" + std::to_string(attempt));
    const pid_t pid = start(tiny_into(killed));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      // Whole lines counted, none parsed: a line being appended may be read in part.
      const std::string steps = slurp(killed / "steps.jsonl");
      if (fs::exists(killed / "checkpoint.bin") && std::count(steps.begin(), steps.end(), '\n') >= 45) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_TRUE(fs::exists(killed / "checkpoint.bin"));
    ::kill(pid, SIGKILL);
    const int status = finish(pid);
    at_kill = read_checkpoint(checkpoint_path(killed.string()));
    if (status == -1 && !at_kill.complete) break;
    ASSERT_LT(attempt, 8) << "the run ended before it was killed, " << attempt << " times";
  }

  ASSERT_EQ(run({"--resume", killed.string()}), 0) << err_;
  EXPECT_NE(out_.find("resuming " + killed.string() + " at step " + std::to_string(at_kill.steps_done) + "/80"),
            std::string::npos)
      << out_;
  expect_same_numerics(straight, killed, 80);
}

TEST_F(ResumeCli, ErrorsExit2AndChangeNothing) {
  // The same scenario stopped after 30 steps (a checkpoint at 25, 5 lines past it).
  std::vector<std::string> sets;
  for (size_t i = 1; i < kTiny.size(); i += 2) sets.push_back(kTiny[i]);
  const fs::path out = dir_ / "run";
  RunOptions o;
  o.out_dir = out.string();
  o.stop_after_steps = 30;
  run_training(builtin_scenario("default", sets), o);
  const std::string steps = slurp(out / "steps.jsonl"), checkpoint = slurp(out / "checkpoint.bin");
  ASSERT_EQ(read_jsonl(out / "steps.jsonl").size(), 30u);

  // A scenario that disagrees names --resume and the key.
  EXPECT_EQ(run({"--resume", out.string(), "--set", "training.lr=0.02"}), 2);
  EXPECT_NE(err_.find("--resume"), std::string::npos) << err_;
  EXPECT_NE(err_.find("training.lr"), std::string::npos) << err_;
  EXPECT_EQ(run({"--resume", out.string(), "--builtin", "default"}), 2);
  EXPECT_NE(err_.find("model.layers"), std::string::npos) << err_;

  EXPECT_EQ(run({"--resume", out.string(), "--out", (dir_ / "elsewhere").string()}), 2);
  EXPECT_NE(err_.find("--out"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(dir_ / "elsewhere"));

  EXPECT_EQ(run({"--resume", (dir_ / "nowhere").string()}), 2);
  EXPECT_NE(err_.find("--resume"), std::string::npos) << err_;

  std::string damaged = checkpoint;
  damaged[damaged.size() - 3] ^= 0x11;
  std::ofstream(out / "checkpoint.bin", std::ios::binary | std::ios::trunc) << damaged;
  EXPECT_EQ(run({"--resume", out.string()}), 2);
  EXPECT_NE(err_.find("damaged"), std::string::npos) << err_;
  EXPECT_EQ(slurp(out / "steps.jsonl"), steps);

  // With the intact checkpoint the run ends (the same scenario given is accepted); again: nothing to do, exit 0.
  std::ofstream(out / "checkpoint.bin", std::ios::binary | std::ios::trunc) << checkpoint;
  std::vector<std::string> same = {"--resume", out.string()};
  same.insert(same.end(), kTiny.begin(), kTiny.end());
  ASSERT_EQ(run(same), 0) << err_;
  EXPECT_EQ(read_jsonl(out / "steps.jsonl").size(), 80u);
  const std::string finished = slurp(out / "steps.jsonl");
  EXPECT_EQ(run({"--resume", out.string()}), 0) << err_;
  EXPECT_NE(out_.find("already ended"), std::string::npos) << out_;
  EXPECT_EQ(slurp(out / "steps.jsonl"), finished);
}

}  // namespace
}  // namespace lowband::train::test
