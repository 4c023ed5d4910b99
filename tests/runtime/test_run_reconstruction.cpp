// `lowband run` reports the K/V reconstruction error per layer (issue 4): in
// steps.jsonl on every step the codec compresses, and in summary.json as the
// last step's values and the mean over the last 10 % of steps.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/scenario/load.h"
#include "runtime/train/run.h"
#include "tests/temp_dir.h"

namespace lowband::train::test {
namespace {

namespace fs = std::filesystem;

constexpr int kLayers = 2;
constexpr int kWarmupSteps = 2;
constexpr int kSteps = 5;

// P = 2 ranks, 2 layers, 2 kv heads x head_dim 8, seq 64, batch 2.
Scenario tiny(std::vector<std::string> extra) {
  std::vector<std::string> sets = {"model.layers=2",        "model.d_model=32",       "model.heads=4",
                                   "model.kv_heads=2",      "model.ffn_hidden=64",    "model.seq_len=64",
                                   "parallel.context=2",    "parallel.exchange=ring", "network.nodes=2",
                                   "training.batch_size=2", "training.lr=0.01",       "training.lr_warmup_steps=0",
                                   "training.steps=5",      "training.eval_every=0"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return builtin_scenario("default", sets);
}

std::vector<std::string> mos(int rank) {
  return {"compression.method=mos", "compression.k_rank=" + std::to_string(rank),
          "compression.v_rank=" + std::to_string(rank), "compression.warmup_steps=" + std::to_string(kWarmupSteps)};
}

std::vector<nlohmann::json> read_jsonl(const fs::path& p) {
  std::vector<nlohmann::json> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

class RunReconstruction : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_support::unique_test_temp_dir("lowband_run_recon");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the scenario into dir_; returns its steps.jsonl lines (summary in summary_).
  std::vector<nlohmann::json> run(const Scenario& s) {
    RunOptions options;
    options.out_dir = dir_.string();
    const RunResult r = run_training(s, options);
    EXPECT_FALSE(r.diverged) << r.message;
    EXPECT_EQ(r.steps_done, kSteps);
    summary_ = read_json(dir_ / "summary.json");
    return read_jsonl(dir_ / "steps.jsonl");
  }

  // The errors of the compressed steps (each checked for shape and range), K then V.
  std::vector<double> compressed_errors(const std::vector<nlohmann::json>& steps) {
    std::vector<double> out;
    EXPECT_EQ(steps.size(), size_t(kSteps));
    for (const auto& line : steps) {
      const int step = line.at("step").get<int>();  // 1-based
      if (step <= kWarmupSteps) {
        EXPECT_FALSE(line.contains("kv_reconstruction_error")) << "warm-up step " << step;
        continue;
      }
      EXPECT_TRUE(line.contains("kv_reconstruction_error")) << "step " << step;
      if (!line.contains("kv_reconstruction_error")) continue;
      for (const char* t : {"k", "v"}) {
        const auto& per_layer = line["kv_reconstruction_error"].at(t);
        EXPECT_EQ(per_layer.size(), size_t(kLayers)) << t << " at step " << step;
        for (const auto& e : per_layer) {
          EXPECT_GE(e.get<double>(), 0.0);
          EXPECT_LE(e.get<double>(), 1.0);
          out.push_back(e.get<double>());
        }
      }
    }
    return out;
  }

  fs::path dir_;
  nlohmann::json summary_;
};

TEST_F(RunReconstruction, AbsentWithoutCompression) {
  for (const auto& line : run(tiny({"compression.method=none"})))
    EXPECT_FALSE(line.contains("kv_reconstruction_error")) << line.dump();
  EXPECT_FALSE(summary_.contains("kv_reconstruction_error"));
  EXPECT_FALSE(summary_.contains("kv_reconstruction_error_mean_last_10pct"));
  EXPECT_FALSE(summary_.contains("codec_ranks"));
}

TEST_F(RunReconstruction, FullRankIsExact) {
  const auto errors = compressed_errors(run(tiny(mos(8))));  // rank = head_dim
  ASSERT_EQ(errors.size(), size_t((kSteps - kWarmupSteps) * 2 * kLayers));
  for (double e : errors) EXPECT_LT(e, 1e-5);
}

TEST_F(RunReconstruction, RankOneLosesInformationAndSummaryHasTheLastStep) {
  const auto steps = run(tiny(mos(1)));
  const auto errors = compressed_errors(steps);
  ASSERT_EQ(errors.size(), size_t((kSteps - kWarmupSteps) * 2 * kLayers));
  // One direction of eight cannot hold a head's K or V; the final layer crosses
  // uncompressed (compression.compress_final_layer false), so its error is 0.
  for (size_t i = 0; i < errors.size(); ++i) {
    if (i % kLayers == kLayers - 1) EXPECT_EQ(errors[i], 0.0) << "final layer, entry " << i;
    else EXPECT_GT(errors[i], 0.05) << "entry " << i;
  }

  // summary.json: what the codec keeps (rank 1 of head_dim 8; layer 0 of 2 compressed).
  EXPECT_EQ(summary_.at("codec_ranks"),
            (nlohmann::json{{"k", 1}, {"v", 1}, {"head_dim", 8}, {"compressed_layers", 1}, {"layers", 2}}));
  EXPECT_NE(summary_.at("codec").get<std::string>().find("final layer uncompressed"), std::string::npos);
  // summary.json: the last step's values, and the mean over the last 10 % of
  // 5 steps, i.e. the last step alone.
  ASSERT_TRUE(summary_.contains("kv_reconstruction_error"));
  EXPECT_EQ(summary_["kv_reconstruction_error"], steps.back()["kv_reconstruction_error"]);
  const auto& mean = summary_.at("kv_reconstruction_error_mean_last_10pct");
  EXPECT_EQ(mean.at("steps").get<int>(), 1);
  for (const char* t : {"k", "v"})
    for (int l = 0; l < kLayers; ++l)
      EXPECT_DOUBLE_EQ(mean.at(t).at(l).get<double>(), steps.back()["kv_reconstruction_error"][t][l].get<double>());
}

TEST_F(RunReconstruction, EveryLayerLosesWhenTheFinalLayerIsCompressedToo) {
  std::vector<std::string> sets = mos(1);
  sets.push_back("compression.compress_final_layer=true");
  for (double e : compressed_errors(run(tiny(sets)))) EXPECT_GT(e, 0.05);
  EXPECT_EQ(summary_.at("codec_ranks").at("compressed_layers"), 2);
}

TEST_F(RunReconstruction, BaselinesReportFromTheFirstStep) {
  for (const std::string method : {"topk", "quantize"}) {
    SCOPED_TRACE(method);
    fs::remove_all(dir_);
    std::vector<std::string> sets = {"compression.method=" + method};
    if (method == "topk") sets.push_back("compression.topk_fraction=0.1");
    for (const auto& line : run(tiny(sets))) {  // no warm-up: every step is compressed
      ASSERT_TRUE(line.contains("kv_reconstruction_error")) << line.dump();
      for (const char* t : {"k", "v"}) {
        ASSERT_EQ(line["kv_reconstruction_error"][t].size(), size_t(kLayers));
        for (const auto& e : line["kv_reconstruction_error"][t]) {
          EXPECT_GT(e.get<double>(), 0.0);  // both are lossy on real activations
          EXPECT_LE(e.get<double>(), 1.0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace lowband::train::test
