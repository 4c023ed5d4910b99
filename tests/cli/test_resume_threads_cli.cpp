// `lowband run --resume` at another thread count (issue 10). With oneDNN's AVX2
// sgemm (ONEDNN_MAX_CPU_ISA=AVX2, so AVX-512 machines take that path too) a
// training's gradient norms depend on the OpenMP thread count from step 1. A run
// trained with 1 thread and killed after a checkpoint, resumed by a process whose
// default is 2 threads (OMP_NUM_THREADS=2), continues with the 1 thread its
// checkpoint records and ends bit for bit like the uninterrupted 1-thread run;
// `--threads` forcing another count continues with a warning, and so does a
// checkpoint of format version 1, which records no count.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/binary_io.h"
#include "runtime/train/checkpoint.h"
#include "tests/runtime/test_resume_support.h"

namespace lowband::train::test {
namespace {

// 300 steps of ~2 ms, a checkpoint every 25: the first one is written at step 25,
// and the test has the rest of the run to kill it (retrying in a fresh directory
// when the run ended first).
const std::vector<std::string> kTiny = tiny_run_args(300);

using Env = std::map<std::string, std::string>;

// The thread-count-dependent sgemm, whatever the CPU's widest ISA.
Env with_threads(int threads) { return {{"OMP_NUM_THREADS", std::to_string(threads)}, {"ONEDNN_MAX_CPU_ISA", "AVX2"}}; }

class ResumeThreadsCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test_support::unique_test_temp_dir("lowband_resume_threads"); }
  void TearDown() override { fs::remove_all(dir_); }

  // Starts `lowband run ARGS...` with this environment plus `env`, stdout and
  // stderr to files; returns its pid. argv and envp are built before fork().
  pid_t start(std::vector<std::string> args, const Env& env) {
    return start_lowband_run(std::move(args), env, (dir_ / "stdout").string(), (dir_ / "stderr").string());
  }
  int finish(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    out_ = slurp(dir_ / "stdout");
    err_ = slurp(dir_ / "stderr");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  int run(std::vector<std::string> args, const Env& env) { return finish(start(std::move(args), env)); }
  std::vector<std::string> tiny_into(const fs::path& out) {
    std::vector<std::string> a = kTiny;
    a.insert(a.end(), {"--out", out.string()});
    return a;
  }

  // A run started with `threads` threads and killed after its first checkpoint.
  fs::path killed_run(int threads, const std::string& name) {
    for (int attempt = 1;; ++attempt) {
      const fs::path killed = dir_ / (name + std::to_string(attempt));
      const pid_t pid = start(tiny_into(killed), with_threads(threads));
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!fs::exists(killed / "checkpoint.bin") && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      ::kill(pid, SIGKILL);
      const int status = finish(pid);
      EXPECT_TRUE(fs::exists(killed / "checkpoint.bin")) << err_;
      if (!fs::exists(killed / "checkpoint.bin")) return killed;
      if (status == -1 && !read_checkpoint(checkpoint_path(killed.string())).complete) return killed;
      EXPECT_LT(attempt, 8) << "the run ended before it was killed, " << attempt << " times";
      if (attempt >= 8) return killed;
    }
  }

  fs::path dir_;
  std::string out_, err_;
};

TEST_F(ResumeThreadsCli, ResumedByATwoThreadProcessEqualsTheOneThreadRun) {
  const fs::path straight = dir_ / "straight";
  ASSERT_EQ(run(tiny_into(straight), with_threads(1)), 0) << err_;
  const fs::path killed = killed_run(1, "killed");
  ASSERT_FALSE(HasFailure());

  EXPECT_EQ(read_checkpoint(checkpoint_path(killed.string())).omp_threads, 1);

  ASSERT_EQ(run({"--resume", killed.string()}, with_threads(2)), 0) << err_;
  // One line says the recorded count is used instead of this process's 2.
  EXPECT_NE(out_.find("with 1 OpenMP thread\n"), std::string::npos) << out_;
  EXPECT_NE(out_.find("the count the run was trained with"), std::string::npos) << out_;
  EXPECT_EQ(err_.find("warning"), std::string::npos) << err_;
  expect_same_numerics(straight, killed, 300);
}

TEST_F(ResumeThreadsCli, ForcingAnotherCountWarns) {
  const fs::path forced = killed_run(1, "forced");
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(run({"--resume", forced.string(), "--threads", "2"}, with_threads(1)), 0) << err_;
  EXPECT_NE(out_.find("with 2 OpenMP threads\n"), std::string::npos) << out_;
  EXPECT_NE(err_.find("warning: continuing with 2 OpenMP threads (--threads)"), std::string::npos) << err_;
  EXPECT_NE(err_.find("not be bit-identical"), std::string::npos) << err_;
  EXPECT_EQ(read_jsonl(forced / "steps.jsonl").size(), 300u);

  // --threads equal to the recorded count: no warning, whatever OMP_NUM_THREADS says.
  const fs::path same = killed_run(1, "same");
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(run({"--resume", same.string(), "--threads", "1"}, with_threads(2)), 0) << err_;
  EXPECT_NE(out_.find("with 1 OpenMP thread\n"), std::string::npos) << out_;
  EXPECT_EQ(err_.find("warning"), std::string::npos) << err_;
  EXPECT_EQ(out_.find("the count the run was trained with"), std::string::npos) << out_;

  EXPECT_EQ(run({"--resume", same.string(), "--threads", "0"}, with_threads(1)), 2);
  EXPECT_NE(err_.find("--threads"), std::string::npos) << err_;
}

// The checkpoint as format version 1 wrote it: no thread count after the targets.
void downgrade_to_version_1(const fs::path& file) {
  std::string bytes = slurp(file);
  ASSERT_GT(bytes.size(), 40u);
  bytes.resize(bytes.size() - 8);  // the i64 thread count, last in the payload
  const uint64_t version = 1, size = bytes.size() - 32, sum = binary::checksum64(bytes.data() + 32, size);
  std::memcpy(bytes.data() + 8, &version, 8);
  std::memcpy(bytes.data() + 16, &size, 8);
  std::memcpy(bytes.data() + 24, &sum, 8);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

TEST_F(ResumeThreadsCli, AVersion1CheckpointResumesWithAWarning) {
  const fs::path straight = dir_ / "straight";
  ASSERT_EQ(run(tiny_into(straight), with_threads(1)), 0) << err_;
  const fs::path old = killed_run(1, "old");
  ASSERT_FALSE(HasFailure());
  downgrade_to_version_1(checkpoint_path(old.string()));
  const Checkpoint c = read_checkpoint(checkpoint_path(old.string()));
  EXPECT_EQ(c.omp_threads, 0);
  EXPECT_FALSE(c.complete);

  // Unknown count: this process's (1, as it happens the run's) with a warning.
  ASSERT_EQ(run({"--resume", old.string()}, with_threads(1)), 0) << err_;
  EXPECT_NE(err_.find("warning: checkpoint.bin does not record the OpenMP thread count"), std::string::npos) << err_;
  expect_same_numerics(straight, old, 300);
}

TEST(ResumeThreads, TheRecordedCountUnlessForcedOrUnknown) {
  ResumeThreads r = resume_threads(1, 1, false);
  EXPECT_EQ(r.threads, 1);
  EXPECT_EQ(r.message, "");
  r = resume_threads(4, 4, true);
  EXPECT_EQ(r.threads, 4);
  EXPECT_EQ(r.message, "");
  r = resume_threads(1, 2, false);  // the process would use 2: it keeps the run's 1, and says so
  EXPECT_EQ(r.threads, 1);
  EXPECT_FALSE(r.warning);
  EXPECT_NE(r.message.find("continuing with 1 OpenMP thread,"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("not this process's 2"), std::string::npos) << r.message;
  r = resume_threads(8, 2, true);  // --threads 2: taken, with a warning
  EXPECT_EQ(r.threads, 2);
  EXPECT_TRUE(r.warning);
  EXPECT_NE(r.message.find("trained with 8 OpenMP threads"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("not be bit-identical"), std::string::npos) << r.message;
  for (bool forced : {false, true}) {  // a version 1 checkpoint: the process's count, with a warning
    r = resume_threads(0, 3, forced);
    EXPECT_EQ(r.threads, 3);
    EXPECT_TRUE(r.warning);
    EXPECT_NE(r.message.find("does not record"), std::string::npos) << r.message;
  }
}

TEST(ResumeThreads, TheCheckpointRoundTripsTheCount) {
  const fs::path dir = test_support::unique_test_temp_dir("lowband_resume_threads");
  Checkpoint c;
  c.scenario_json = "{}";
  c.steps_done = 7;
  c.trainer_state = "state";
  c.targets.push_back({dir.string(), "{}", RunTotals{}, 0});
  c.omp_threads = 3;
  write_checkpoint(dir.string(), c);
  EXPECT_EQ(read_checkpoint(checkpoint_path(dir.string())).omp_threads, 3);
  c.omp_threads = 0;
  write_checkpoint(dir.string(), c);
  EXPECT_EQ(read_checkpoint(checkpoint_path(dir.string())).omp_threads, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lowband::train::test
