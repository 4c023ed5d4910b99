// `lowband sweep --launcher slurm` and the array task it submits, `sweep --resume
// DIR --training N`, without a cluster: sbatch is a script that keeps what it is
// given (LOWBAND_SBATCH), and the tasks run here as Slurm would run them, at once.
// The sweep they write equals the one `sweep --jobs 2` writes, number for number;
// a training submitted twice is trained once. (tests/cli/test_slurm_cluster_cli.cpp
// runs the same on a real single-node Slurm where one can start.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_support.h"
#include "tests/cli/sweep_support.h"

namespace lowband::test_support {
namespace {

using nlohmann::json;

// 2 bandwidths x 2 ratios: 4 points from 2 trainings.
const std::string kTinyGrid = kTinySweep + " --set training.checkpoint_every=0"
                              " --set network.bandwidth=80Mbps,10Gbps --set compression.ratio=0,0.9 --steps 3";

class SweepSlurm : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    // sbatch: keeps the script and its arguments, answers a job id as --parsable does.
    const fs::path fake = write("sbatch", "#!/bin/sh\n[ \"$1\" = --version ] && { echo slurm 22.05.8; exit 0; }\n"
                                          "echo \"$@\" >>\"" + (dir_ / "sbatch-args").string() + "\"\n"
                                          "cp \"$2\" \"" + (dir_ / "submitted.sbatch").string() + "\"\n"
                                          "echo 4242\n");
    fs::permissions(fake, fs::perms::owner_all);
    ::setenv("LOWBAND_SBATCH", fake.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("LOWBAND_SBATCH");
    Cli::TearDown();
  }
  // The array tasks of `trainings`, started together as Slurm starts them.
  CommandResult run_tasks(const fs::path& sweep, const std::vector<int>& trainings) {
    std::string cmd;
    for (size_t i = 0; i < trainings.size(); ++i)
      cmd += std::string(LOWBAND_BINARY) + " sweep --resume " + sweep.string() + " --training " +
             std::to_string(trainings[i]) + " --threads 1 >" + (dir_ / ("task" + std::to_string(i))).string() +
             " 2>&1 & ";
    cmd += "wait";
    CommandResult r;
    r.exit_code = std::system(("bash -c '" + cmd + "'").c_str());
    for (size_t i = 0; i < trainings.size(); ++i) r.out += slurp(dir_ / ("task" + std::to_string(i)));
    return r;
  }
};

TEST_F(SweepSlurm, DryRunPrintsTheBatchScriptAndWritesNothing) {
  const fs::path out = dir_ / "s";
  CommandResult r = run("sweep --builtin default --set network.bandwidth=80Mbps,1Gbps --set training.seed=1,2,3"
                        " --launcher slurm --dry-run --jobs 2 --threads 3 --sbatch-time 1:00:00 --sbatch-mem 4G"
                        " --partition short --account lab --sbatch=--qos=long --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string abs = fs::absolute(out).lexically_normal().string();
  for (const std::string& line : std::vector<std::string>{"#SBATCH --array=1-3%2\n", "#SBATCH --cpus-per-task=3\n", "#SBATCH --time=1:00:00\n", "#SBATCH --mem=4G\n",
        "#SBATCH --partition=short\n", "#SBATCH --account=lab\n", "#SBATCH --qos=long\n",
        "#SBATCH --output=" + abs + "/slurm/training-%a.out\n", "export OMP_NUM_THREADS=3\n",
        " sweep --resume '" + abs + "' --training \"$SLURM_ARRAY_TASK_ID\" --threads 3\n"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  EXPECT_EQ(r.out.find("--gres"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(dir_ / "sbatch-args"));  // nothing submitted
  // A scenario on the GPU backend asks for a GPU per task.
  r = run("sweep --builtin default --set training.seed=1,2 --set training.backend=cuda --launcher slurm --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("#SBATCH --gres=gpu:1\n"), std::string::npos) << r.out;
  // sbatch's options belong to the launcher that uses them; one training to a sweep directory.
  for (const std::string& bad : {std::string("sweep --builtin default --dry-run --partition short"),
                                 std::string("sweep --builtin default --training 1"),
                                 "sweep --resume " + out.string() + " --training 1 --launcher slurm",
                                 // one line each: the script's #SBATCH lines would otherwise run shell
                                 std::string("sweep --builtin default --launcher slurm --dry-run --partition "
                                             "\"$(printf 'a\\necho hi')\"")}) {
    r = run(bad);
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
  }
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(SweepSlurm, ArrayTasksWriteTheSweepThatOneMachineWrites) {
  const fs::path sweep = dir_ / "slurm-sweep", local = dir_ / "local-sweep";
  CommandResult r = run("sweep" + kTinyGrid + " --launcher slurm --jobs 2 --threads 1 --out " + sweep.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("submitted job array 4242: trainings 1-2 of 2, 2 at once"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(sweep / "slurm" / "jobs"), "4242 1-2\n");
  EXPECT_EQ(slurp(dir_ / "submitted.sbatch"), slurp(sweep / "slurm" / "array.sbatch"));
  for (const json& p : read_json(sweep / "index.json").at("points")) EXPECT_EQ(p.at("status"), "pending");
  // --status names the job array, and each task's state as squeue gives it.
  const fs::path squeue = write("squeue", "#!/bin/sh\necho '4242_1 RUNNING'\necho '4242_2 PENDING'\n");
  fs::permissions(squeue, fs::perms::owner_all);
  ::setenv("LOWBAND_SQUEUE", squeue.c_str(), 1);
  r = run("sweep --status " + sweep.string());
  ::unsetenv("LOWBAND_SQUEUE");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("slurm job array 4242: trainings 1-2\n  slurm task 4242_1: RUNNING\n  slurm task 4242_2: PENDING\n"),
            std::string::npos) << r.out;

  // Training 1 alone, then a second submission asks only for training 2.
  r = run_tasks(sweep, {1});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = run("sweep --resume " + sweep.string() + " --launcher slurm");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("trainings 2 of 2"), std::string::npos) << r.out;
  EXPECT_NE(slurp(dir_ / "submitted.sbatch").find("#SBATCH --array=2\n"), std::string::npos);
  // Training 2 twice at once (a submission repeated): trained once.
  r = run_tasks(sweep, {2, 2});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = run("sweep --resume " + sweep.string() + " --launcher slurm");
  EXPECT_NE(r.out.find("every training is done; nothing submitted"), std::string::npos) << r.out;

  r = run("sweep" + kTinyGrid + " --jobs 2 --threads 1 --out " + local.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_same_sweep(sweep, local, 3);
}

}  // namespace
}  // namespace lowband::test_support
