// One writer per directory and what a kill or a full disk leaves (issue 15): a
// second `lowband run --out` into a run directory in use exits 2 naming it; a
// SIGKILLed sweep's worker dies with it, so an immediate `sweep --resume` finishes
// every point with each step once; a full disk is exit 2 naming the file, with
// steps.jsonl still ending on a whole line and no temporary file left behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/runtime/test_resume_support.h"

namespace lowband::train::test {
namespace {

using Clock = std::chrono::steady_clock;

class DirLockCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test_support::unique_test_temp_dir("lowband_dir_lock"); }
  void TearDown() override { fs::remove_all(dir_); }

  pid_t start(std::vector<std::string> args, const std::string& name, const std::function<void()>& in_child = {}) {
    return start_lowband(std::move(args), {}, (dir_ / (name + ".out")).string(), (dir_ / (name + ".err")).string(),
                         in_child);
  }
  int finish(pid_t pid, const std::string& name) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    err_ = slurp(dir_ / (name + ".err"));
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  // Waits (up to 60 s) until `file` holds at least `lines` whole lines.
  static bool wait_for_lines(const fs::path& file, long lines) {
    for (const auto deadline = Clock::now() + std::chrono::seconds(60); Clock::now() < deadline;) {
      const std::string text = slurp(file);
      if (std::count(text.begin(), text.end(), '\n') >= lines) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  fs::path dir_;
  std::string err_;
};

std::vector<std::string> tiny_into(int steps, const fs::path& out) {
  std::vector<std::string> a = tiny_run_args(steps);
  a.insert(a.begin(), {"run", "--builtin", "default"});
  a.insert(a.end(), {"--out", out.string()});
  return a;
}

// Each step once, in order, every line whole.
void expect_steps_once(const fs::path& run_dir, size_t steps) {
  const std::string text = slurp(run_dir / "steps.jsonl");
  ASSERT_TRUE(text.empty() || text.back() == '\n') << run_dir;
  const auto lines = read_jsonl(run_dir / "steps.jsonl");
  ASSERT_EQ(lines.size(), steps) << run_dir;
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i].at("step").get<size_t>(), i + 1) << run_dir;
}

TEST_F(DirLockCli, ASecondRunIntoADirectoryInUseExits2NamingIt) {
  const fs::path out = dir_ / "run";
  const pid_t first = start(tiny_into(100000, out), "first");  // minutes: killed below
  ASSERT_TRUE(wait_for_lines(out / "steps.jsonl", 20));
  const pid_t second = start(tiny_into(100000, out), "second");
  EXPECT_EQ(finish(second, "second"), 2);
  EXPECT_EQ(std::count(err_.begin(), err_.end(), '\n'), 1) << err_;
  EXPECT_NE(err_.find(out.string() + " is in use by another lowband process"), std::string::npos) << err_;
  ::kill(first, SIGKILL);
  finish(first, "first");
  // Only the first run's steps: the lines up to the kill, each step once.
  const auto lines = read_jsonl(out / "steps.jsonl");
  ASSERT_GE(lines.size(), 20u);
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i].at("step").get<size_t>(), i + 1);
}

// The pids of the sweep workers writing into `sweep_dir` (their command lines name it).
std::vector<pid_t> workers_of(const fs::path& sweep_dir) {
  std::vector<pid_t> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = slurp(entry.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    const std::string stat = slurp(entry.path() / "stat");
    const bool zombie = stat.find(") Z ") != std::string::npos;
    if (!zombie && cmdline.find("sweep-worker") != std::string::npos &&
        cmdline.find(sweep_dir.string() + "/") != std::string::npos)
      pids.push_back(pid_t(std::stol(name)));
  }
  return pids;
}

TEST_F(DirLockCli, AKilledSweepsWorkerDiesWithItAndAnImmediateResumeWritesEachStepOnce) {
  const fs::path sweep = dir_ / "sweep";
  std::vector<std::string> args = tiny_run_args(1500);  // seconds per training
  args.insert(args.begin(), {"sweep", "--builtin", "default"});
  args.insert(args.end(), {"--set", "network.bandwidth=80Mbps,10Gbps", "--jobs", "1", "--threads", "1", "--out",
                           sweep.string()});
  const pid_t pid = start(args, "sweep");
  // The training's directory is the first point's (the other is timed on it).
  fs::path trained;
  for (const auto deadline = Clock::now() + std::chrono::seconds(60); trained.empty() && Clock::now() < deadline;)
    for (const auto& entry : fs::directory_iterator(dir_))  // the sweep directory, when it exists
      if (entry.path() == sweep)
        for (const auto& point : fs::directory_iterator(sweep))
          if (fs::exists(point.path() / "steps.jsonl")) trained = point.path();
  ASSERT_FALSE(trained.empty());
  ASSERT_TRUE(wait_for_lines(trained / "steps.jsonl", 45));  // a checkpoint at 25, steps after it
  const std::vector<pid_t> workers = workers_of(sweep);
  ASSERT_EQ(workers.size(), 1u);
  ::kill(pid, SIGKILL);
  ASSERT_EQ(finish(pid, "sweep"), -1) << "the sweep ended before it was killed";

  // Started at once, the resume waits on the sweep's lock, which the dying worker holds.
  const pid_t resume = start({"sweep", "--resume", sweep.string()}, "resume");
  bool gone = false;
  for (const auto deadline = Clock::now() + std::chrono::seconds(1); !gone && Clock::now() < deadline;) {
    const std::vector<pid_t> now = workers_of(sweep);  // the resume's own worker may be among them
    gone = std::find(now.begin(), now.end(), workers.front()) == now.end();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(gone) << "the killed sweep's worker " << workers.front() << " is still running";
  ASSERT_EQ(finish(resume, "resume"), 0) << err_;
  for (const auto& entry : fs::directory_iterator(sweep))
    if (fs::exists(entry.path() / "summary.json")) expect_steps_once(entry.path(), 1500);
}

// A disk that fills up: writes past `bytes` per file fail (RLIMIT_FSIZE, with
// SIGXFSZ ignored so that write() returns EFBIG as on a full disk).
std::function<void()> file_size_limit(rlim_t bytes) {
  return [bytes] {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{bytes, bytes};
    ::setrlimit(RLIMIT_FSIZE, &limit);
  };
}

TEST_F(DirLockCli, AFullDiskExits2NamingTheFileAndLeavesWholeLines) {
  // ~420 bytes a line: steps.jsonl fills mid-line in the first batch of 20 steps;
  // with 30000 bytes the steps fit and the checkpoint at step 25 does not.
  for (const auto& [limit, file] : {std::pair<rlim_t, std::string>{6000, "steps.jsonl"}, {30000, "checkpoint.bin"}}) {
    const fs::path out = dir_ / ("full" + std::to_string(limit));
    EXPECT_EQ(finish(start(tiny_into(80, out), "full", file_size_limit(limit)), "full"), 2) << err_;
    EXPECT_EQ(std::count(err_.begin(), err_.end(), '\n'), 1) << err_;
    EXPECT_NE(err_.find((out / file).string()), std::string::npos) << err_;
    const std::string steps = slurp(out / "steps.jsonl");
    ASSERT_FALSE(steps.empty());
    EXPECT_EQ(steps.back(), '\n');
    EXPECT_NO_THROW(read_jsonl(out / "steps.jsonl"));
    for (const auto& entry : fs::directory_iterator(out))
      EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

}  // namespace
}  // namespace lowband::train::test
