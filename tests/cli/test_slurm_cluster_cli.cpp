// `lowband sweep --launcher slurm` on a real Slurm: a single-node cluster
// (slurmctld, slurmd, munged; tests/cli/slurm/single-node-slurm.sh) started in a
// temporary directory and stopped at the end. A 6-point sweep (2 trainings, each
// timed on 3 networks) runs as a job array, 2 tasks at once, and its index and
// numbers equal those of `sweep --jobs 2` on this machine; a task cancelled
// mid-training (scancel of one array element) is run again by a second
// submission, from its checkpoint, to the same numbers; two submissions at once
// train nothing twice. Skips, saying why, where Slurm is missing or cannot start.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_support.h"
#include "tests/cli/sweep_support.h"

namespace lowband::test_support {
namespace {

using nlohmann::json;

const std::string kScript = std::string(LOWBAND_SOURCE_DIR) + "/tests/cli/slurm/single-node-slurm.sh";

// 3 bandwidths x 2 ratios: 6 points, 2 trainings of 40 steps, a checkpoint every 5.
const std::string kGrid = kTinySweep + " --set training.checkpoint_every=5"
                          " --set network.bandwidth=80Mbps,1Gbps,10Gbps --set compression.ratio=0,0.9 --steps 40";

class SlurmCluster : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "the throwaway Slurm's daemons run as root; this test is not root";
    for (const char* program : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "/usr/bin/sbatch"})
      if (!fs::exists(program))
        GTEST_SKIP() << program << " is missing: scripts/install-deps.sh installs slurmctld, slurmd, slurm-client, munge";
    // Its own directory under /tmp: munged wants every directory above its socket open to all.
    cluster_ = unique_temp_dir("lowband_slurm");
    const std::string log = (dir_ / "slurm-up.log").string();
    if (std::system(("bash -c 'source " + kScript + " && slurm_up " + cluster_.string() + "' >" + log + " 2>&1").c_str()) != 0) {
      const std::string why = slurp(log);
      down();
      GTEST_SKIP() << "Slurm could not start here: " << why.substr(why.size() > 600 ? why.size() - 600 : 0);
    }
    up_ = true;
    ::setenv("SLURM_CONF", (cluster_ / "slurm.conf").c_str(), 1);
  }
  void TearDown() override {
    down();
    ::unsetenv("SLURM_CONF");
    Cli::TearDown();
  }
  void down() {
    if (!cluster_.empty())
      (void)std::system(("bash -c 'source " + kScript + " && slurm_down " + cluster_.string() + "' >/dev/null 2>&1").c_str());
    up_ = false;
  }
  // The job id of a `--launcher slurm` submission.
  std::string submit(const std::string& args) {
    const CommandResult r = run(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string key = "submitted job array ";
    const size_t at = r.out.find(key);
    if (at == std::string::npos) return "";
    return r.out.substr(at + key.size(), r.out.find(':', at) - at - key.size());
  }
  // Waits until Slurm has no task of `job` left (queued or running).
  bool wait_for(const std::string& job, double seconds = 240) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string out = (dir_ / "squeue.out").string();
      if (std::system(("squeue -h -j " + job + " -o %i >" + out + " 2>/dev/null").c_str()) == 0 && slurp(out).empty())
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }
  fs::path cluster_;
  bool up_ = false;
};

TEST_F(SlurmCluster, AJobArrayTrainsWhatOneMachineTrains) {
  const fs::path local = dir_ / "local", cluster = dir_ / "on-slurm", twice = dir_ / "twice";
  CommandResult r = run("sweep" + kGrid + " --jobs 2 --threads 1 --out " + local.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;

  // The sweep as a job array, 2 tasks at once; one task cancelled once it has a checkpoint.
  const std::string job = submit("sweep" + kGrid + " --launcher slurm --jobs 2 --threads 1 --out " + cluster.string());
  ASSERT_FALSE(job.empty());
  const json plan = read_json(cluster / "index.json");
  const fs::path first = cluster / plan.at("points")[0].at("run_dir").get<std::string>();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (lines_of(first / "steps.jsonl") < 10 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(std::system(("scancel " + job + "_1").c_str()), 0);
  ASSERT_TRUE(wait_for(job)) << "the job array did not end";
  const int at_cancel = lines_of(first / "steps.jsonl");
  EXPECT_LT(at_cancel, 40) << "training 1 ended before it was cancelled: nothing was run again";
  r = run("sweep --status " + cluster.string());
  EXPECT_NE(r.out.find("slurm job array " + job + ": trainings 1-2"), std::string::npos) << r.out;

  // A second submission runs only what is missing, from its checkpoint.
  const std::string again = submit("sweep --resume " + cluster.string() + " --launcher slurm --threads 1");
  ASSERT_FALSE(again.empty());
  EXPECT_NE(slurp(cluster / "slurm" / "array.sbatch").find("#SBATCH --array=1\n"), std::string::npos);
  ASSERT_TRUE(wait_for(again)) << "the second job array did not end";
  EXPECT_NE(slurp(cluster / "groups" / "g1.log").find("resumed at step"), std::string::npos)
      << slurp(cluster / "groups" / "g1.log");
  expect_same_sweep(cluster, local, 40);

  // Two submissions of one sweep at once: every training runs once.
  const std::string one = submit("sweep" + kGrid + " --launcher slurm --jobs 2 --threads 1 --out " + twice.string());
  const std::string two = submit("sweep --resume " + twice.string() + " --launcher slurm --jobs 2 --threads 1");
  ASSERT_FALSE(one.empty());
  ASSERT_FALSE(two.empty());
  ASSERT_TRUE(wait_for(one) && wait_for(two)) << "the job arrays did not end";
  expect_same_sweep(twice, local, 40);
}

}  // namespace
}  // namespace lowband::test_support
