// A sweep killed in the middle of a training continues that training from its
// checkpoint on `lowband sweep --resume`, and ends with the numbers of a sweep
// never killed. The sweeps run oneDNN's AVX2 sgemm (ONEDNN_MAX_CPU_ISA=AVX2, also on
// AVX-512 machines), whose results depend on the thread count: trained with
// --threads 1, the resume (whose own default is 2 threads, OMP_NUM_THREADS=2)
// continues with the 1 thread the checkpoint records (issue 10); --threads given to
// the resume takes that count instead, with a warning.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/slurp.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lowband::test_support::slurp;

// One training (ratio 0) timed on two networks; 80 steps, a checkpoint every 25.
const std::string kSweep =
    "sweep --set model.layers=2 --set model.d_model=32 --set model.heads=4 --set model.kv_heads=2"
    " --set model.ffn_hidden=64 --set model.seq_len=64 --set parallel.context=2 --set network.nodes=2"
    " --set training.batch_size=2 --set training.eval_every=10 --set training.eval_batches=2"
    " --set devices.timing=profile --set training.checkpoint_every=25 --steps 80 --threads 1"
    " --set network.bandwidth=80Mbps,10Gbps";

// The JSON lines of a run directory's steps.jsonl without the wall-clock fields.
std::vector<json> steps_without_wall(const fs::path& run_dir) {
  std::vector<json> out;
  std::ifstream in(run_dir / "steps.jsonl");
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line);
    j.erase("wall_seconds");
    j.erase("record_wall_seconds");
    out.push_back(j);
  }
  return out;
}

// Every lowband process here: the thread-count-dependent sgemm, whatever the CPU.
const std::string kEnv = "ONEDNN_MAX_CPU_ISA=AVX2 ";

int run_shell(const std::string& args, const fs::path& scratch, const std::string& env = "") {
  const std::string cmd = kEnv + env + std::string(LOWBAND_BINARY) + " " + args + " >" + (scratch / "stdout").string() + " 2>" +
                          (scratch / "stderr").string();
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The sweep in its own process group, killed (sweep and worker) once the training
// has written its first checkpoint: into root/NAME<attempt>. A test process
// descheduled until the training ends (a loaded machine, ctest -j) tries again in a
// fresh directory.
void kill_a_sweep(const fs::path& root, const std::string& name, fs::path* killed) {
  for (int attempt = 1;; ++attempt) {
    *killed = root / (name + std::to_string(attempt));
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      const std::string cmd = kEnv + std::string(LOWBAND_BINARY) + " " + kSweep + " --out " + killed->string() +
                              " >" + (root / "killed.out").string() + " 2>&1";
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    ::setpgid(pid, pid);
    const fs::path checkpoint = *killed / "quickstart-bw80Mbps" / "checkpoint.bin";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!fs::exists(checkpoint) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ::kill(-pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(fs::exists(checkpoint)) << slurp(root / "killed.out");
    const std::string summary = slurp(*killed / "quickstart-bw80Mbps" / "summary.json");
    if (json::parse(summary).at("steps_done").get<int>() < 80) break;
    ASSERT_LT(attempt, 8) << "the training finished before it could be killed, " << attempt << " times";
  }
}

TEST(SweepResumeCli, KilledTrainingContinuesFromItsCheckpoint) {
  const fs::path root = fs::temp_directory_path() / ("lowband_sweep_resume_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  ASSERT_EQ(run_shell(kSweep + " --out " + (root / "straight").string(), root), 0) << slurp(root / "stderr");
  fs::path killed;
  kill_a_sweep(root, "killed", &killed);
  ASSERT_FALSE(::testing::Test::HasFailure());

  // Without --threads the resumed sweep would give its training 2 threads.
  ASSERT_EQ(run_shell("sweep --resume " + killed.string(), root, "OMP_NUM_THREADS=2 "), 0)
      << slurp(root / "stdout") << slurp(root / "stderr");
  const std::string out = slurp(root / "stdout"), log = slurp(killed / "groups" / "g1.log");
  EXPECT_NE(out.find("group 1: continuing with 1 OpenMP thread, the count the run was trained with"),
            std::string::npos)
      << out;
  EXPECT_NE(log.find("resumed at step"), std::string::npos) << log;
  EXPECT_NE(log.find("with 1 OpenMP thread\n"), std::string::npos) << log;
  EXPECT_EQ(log.find("warning"), std::string::npos) << log;
  for (const std::string point : {"quickstart-bw80Mbps", "quickstart-bw10Gbps"}) {
    SCOPED_TRACE(point);
    const auto a = steps_without_wall(root / "straight" / point), b = steps_without_wall(killed / point);
    ASSERT_EQ(a.size(), 80u);
    EXPECT_EQ(a, b);
  }
  const json index = json::parse(slurp(killed / "index.json"));
  for (const json& p : index.at("points")) EXPECT_EQ(p.at("status"), "done") << p.dump();
  fs::remove_all(root);
}

// sweep --resume --threads T takes T for a resumed training trained with another
// count, and warns (in the sweep's output and the training's log).
TEST(SweepResumeCli, ForcedThreadsWarn) {
  const fs::path root = fs::temp_directory_path() / ("lowband_sweep_resume_forced_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  fs::path killed;
  kill_a_sweep(root, "killed", &killed);
  ASSERT_FALSE(::testing::Test::HasFailure());
  ASSERT_EQ(run_shell("sweep --resume " + killed.string() + " --threads 2", root), 0)
      << slurp(root / "stdout") << slurp(root / "stderr");
  const std::string out = slurp(root / "stdout"), log = slurp(killed / "groups" / "g1.log");
  EXPECT_NE(out.find("group 1: warning: continuing with 2 OpenMP threads (--threads)"), std::string::npos) << out;
  EXPECT_NE(log.find("with 2 OpenMP threads\n"), std::string::npos) << log;
  EXPECT_NE(log.find("not be bit-identical"), std::string::npos) << log;
  EXPECT_EQ(steps_without_wall(killed / "quickstart-bw80Mbps").size(), 80u);
  fs::remove_all(root);
}

}  // namespace
