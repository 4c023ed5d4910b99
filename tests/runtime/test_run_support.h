#pragma once
// Shared by the tests of `lowband run` as a library call (runtime/train/run.h): a
// tiny scenario, a fresh directory per test, and readers of a run directory's files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/scenario/load.h"
#include "tests/temp_dir.h"
#include "tests/slurp.h"

namespace lowband::train::test {

namespace fs = std::filesystem;

// P = 2 ranks, 2 layers, d_model 32 (4 heads, 2 kv heads of head_dim 8), seq 64,
// batch 1; 4 steps, evaluation every 2, compute seconds from the device profile.
inline Scenario tiny_run_scenario(std::vector<std::string> extra = {}) {
  std::vector<std::string> sets = {"model.layers=2",        "model.d_model=32",    "model.heads=4",
                                   "model.kv_heads=2",      "model.ffn_hidden=64", "model.seq_len=64",
                                   "parallel.context=2",    "network.nodes=2",     "training.batch_size=1",
                                   "training.lr=0.01",      "training.lr_warmup_steps=0", "training.steps=4",
                                   "training.eval_every=2", "devices.timing=profile"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return builtin_scenario("default", sets);
}

using lowband::test_support::slurp;

inline std::vector<nlohmann::json> read_jsonl(const fs::path& p) {
  std::vector<nlohmann::json> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// dir_: an empty directory of this process, named after the test, removed afterwards.
class RunDirTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test_support::unique_test_temp_dir("lowband"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

}  // namespace lowband::train::test
