// `lowband run` end to end: progress lines, the dataset line (the built-in
// corpus says it is GENERATED), the run directory, exit status 3 on divergence
// and 2 on a bad flag.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "kernels/device.h"
#include "tests/slurp.h"
#include "tests/temp_dir.h"

namespace fs = std::filesystem;

namespace {

using lowband::test_support::slurp;

const char* kTiny =
    " --set model.layers=2 --set model.d_model=32 --set model.heads=4 --set model.kv_heads=2"
    " --set model.ffn_hidden=64 --set model.seq_len=64 --set parallel.context=2 --set network.nodes=2"
    " --set training.batch_size=2 --set training.eval_every=2";

class RunCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = lowband::test_support::unique_test_temp_dir("lowband_run_cli");
  }
  void TearDown() override { fs::remove_all(dir_); }

  int run(const std::string& args) {
    const std::string cmd = std::string(LOWBAND_BINARY) + " run" + args + " >" + (dir_ / "stdout").string() +
                            " 2>" + (dir_ / "stderr").string();
    const int status = std::system(cmd.c_str());
    out_ = slurp(dir_ / "stdout");
    err_ = slurp(dir_ / "stderr");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  fs::path dir_;
  std::string out_, err_;
};

TEST_F(RunCli, TrainsAndWritesTheRunDirectory) {
  const fs::path out = dir_ / "run";
  ASSERT_EQ(run(std::string(kTiny) + " --steps 4 --out " + out.string()), 0) << err_;
  EXPECT_NE(out_.find("GENERATED"), std::string::npos) << out_;
  EXPECT_NE(out_.find("step 4/4"), std::string::npos) << out_;  // the last step always gets a progress line
  for (const char* f : {"scenario.json", "steps.jsonl", "curve.csv", "summary.json"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  const auto summary = nlohmann::json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(summary.at("steps_done").get<int>(), 4);  // --steps overrides training.steps
  EXPECT_EQ(summary.at("compute_timing").get<std::string>(), "measured");  // cpu profile
}

TEST_F(RunCli, DivergenceExitsWithStatus3AndTheStep) {
  const fs::path out = dir_ / "run";
  ASSERT_EQ(run(std::string(kTiny) + " --set training.lr=1e30 --set training.grad_clip=0 --steps 20 --out " +
                out.string()),
            3)
      << err_;
  EXPECT_NE(err_.find("diverged"), std::string::npos) << err_;
  EXPECT_NE(err_.find("at step "), std::string::npos) << err_;
  EXPECT_TRUE(nlohmann::json::parse(slurp(out / "summary.json")).at("diverged").get<bool>());
}

TEST_F(RunCli, BadStepsIsAnInputError) {
  EXPECT_EQ(run(std::string(kTiny) + " --steps 0 --out " + (dir_ / "run").string()), 2);
  EXPECT_NE(err_.find("--steps"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(dir_ / "run"));
}

// Training on a GPU where none can be used: exit 2, the key named, no run
// directory (skipped where a GPU is present: then it would train).
TEST_F(RunCli, CudaBackendWithoutAGpuIsAnInputError) {
  std::string why;
  if (lowband::kernels::cuda_available(&why)) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(run(std::string(kTiny) + " --set training.backend=cuda --steps 2 --out " + (dir_ / "run").string()), 2);
  EXPECT_NE(err_.find("training.backend"), std::string::npos) << err_;
  EXPECT_NE(err_.find("no CUDA device"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(dir_ / "run"));
}

}  // namespace
