// Checkpoints written by lowband before the trainers became one (issue 23: the
// context trainer's "ctx-sta2", the pipeline trainer's "pip-sta1", the
// data-parallel trainer's "dat-sta1") still resume: `lowband run --resume` of each
// fixture under tests/data/checkpoints/ (a tiny 6-step run killed right after its
// checkpoint at step 3, written by make.sh with the binary of that time) writes
// steps 4..6 with the numbers that binary's own --resume wrote (after-resume.jsonl):
// every steps.jsonl field but wall-clock ones; losses, norms and errors to 1e-6
// relative (bit for bit on the machine and build that wrote them; another CPU's
// -march=native kernels or a sanitizer build round differently in the last digits,
// ~1e-8, while a state read wrongly moves them by far more), the rest exactly.
// Not the replayed step times: the checkpoint holds none of them, and they move
// whenever the network model or a schedule does (issue 25 moved the codec's error
// sums onto the loss's all-reduce); of them only the simulated total restored
// from the checkpoint (step 4's total less its step) is compared; nor the
// graph's compute (compute_seconds), which moves when a span joins the graph
// (issue 27 added the outer step's "outer_sync" spans).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/runtime/test_resume_support.h"

namespace lowband::train::test {
namespace {

class OldCheckpoint : public ::testing::TestWithParam<const char*> {};

// Numbers to `rel` relative (absolute near zero), everything else exactly.
void expect_close(const nlohmann::json& got, const nlohmann::json& want, const std::string& path, double rel) {
  if (want.is_number_float() || (want.is_number() && got.is_number_float())) {
    ASSERT_TRUE(got.is_number()) << path << ": " << got;
    const double g = got.get<double>(), w = want.get<double>();
    EXPECT_LE(std::abs(g - w), rel * std::max(std::abs(w), 1e-12)) << path << ": " << g << " vs " << w;
  } else if (want.is_object()) {
    ASSERT_TRUE(got.is_object()) << path;
    EXPECT_EQ(got.size(), want.size()) << path << ": " << got << " vs " << want;
    for (auto it = want.begin(); it != want.end(); ++it) {
      ASSERT_TRUE(got.contains(it.key())) << path << "." << it.key();
      expect_close(got.at(it.key()), it.value(), path + "." + it.key(), rel);
    }
  } else if (want.is_array()) {
    ASSERT_TRUE(got.is_array() && got.size() == want.size()) << path << ": " << got << " vs " << want;
    for (size_t i = 0; i < want.size(); ++i) expect_close(got[i], want[i], path + "." + std::to_string(i), rel);
  } else {
    EXPECT_EQ(got, want) << path;
  }
}

TEST_P(OldCheckpoint, ResumesToTheOldBinarysNumbers) {
  const fs::path fixture = fs::path(LOWBAND_SOURCE_DIR) / "tests/data/checkpoints" / GetParam();
  const fs::path dir = test_support::unique_test_temp_dir("lowband_old_checkpoint");
  const fs::path run = dir / "run";
  fs::create_directories(run);
  for (const char* file : {"scenario.json", "steps.jsonl", "curve.csv", "summary.json", "checkpoint.bin"})
    fs::copy_file(fixture / file, run / file);
  // make.sh's sgemm path and thread count (the checkpoint records the count too).
  const pid_t pid = start_lowband_run({"--resume", run.string()}, {{"ONEDNN_MAX_CPU_ISA", "AVX2"}, {"OMP_NUM_THREADS", "2"}},
                                      (dir / "stdout").string(), (dir / "stderr").string());
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(dir / "stderr");
  EXPECT_NE(slurp(dir / "stdout").find("at step 3/6"), std::string::npos) << slurp(dir / "stdout");

  const std::vector<nlohmann::json> got = read_jsonl(run / "steps.jsonl");
  const std::vector<nlohmann::json> want = read_jsonl(fixture / "after-resume.jsonl");
  ASSERT_EQ(got.size(), 6u);
  ASSERT_EQ(want.size(), 3u);
  auto restored_total = [](const nlohmann::json& step4) {
    return step4.at("sim_total_seconds").get<double>() - step4.at("sim_step_seconds").get<double>();
  };
  EXPECT_NEAR(restored_total(got[3]), restored_total(want[0]), 1e-12);
  auto without_replay = [](nlohmann::json j) {
    for (const char* key : {"sim_step_seconds", "sim_total_seconds", "exposed_comm_seconds", "compute_seconds"})
      j.erase(key);
    return without_wall_figures(j);
  };
  for (size_t i = 0; i < want.size(); ++i)
    expect_close(without_replay(got[3 + i]), without_replay(want[i]), "step " + std::to_string(4 + i), 1e-6);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OldCheckpoint,
                         ::testing::Values("context-mos-sparse", "context-sparse-grad", "pipeline-context-mos",
                                           "data-diloco-pipelines"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace lowband::train::test
