// `lowband run` as a library call (runtime/train/run.h): the run directory's
// files, their figures against closed forms, divergence handling, and profile
// timing against the step graph `estimate` replays.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/estimate/estimate.h"
#include "runtime/parallel/dry_steps.h"
#include "runtime/scenario/load.h"
#include "runtime/train/run.h"
#include "sim/replay.h"
#include "tests/runtime/test_run_support.h"

namespace lowband::train::test {
namespace {

// P = 2 ranks, 2 layers, d_kv = 2 kv heads x head_dim 8 = 16, seq 64, batch 2.
Scenario tiny(std::vector<std::string> extra = {}) {
  std::vector<std::string> sets = {"model.layers=2",       "model.d_model=32",        "model.heads=4",
                                   "model.kv_heads=2",     "model.ffn_hidden=64",     "model.seq_len=64",
                                   "parallel.context=2",   "parallel.exchange=ring",  "network.nodes=2",
                                   "training.batch_size=2", "training.lr=0.01",        "training.lr_warmup_steps=0",
                                   "training.steps=6",     "training.eval_every=3"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return builtin_scenario("default", sets);
}

class Run : public RunDirTest {};

// The progress line's clock: hours past 24, and a number where a long would overflow
// (1e-300bps once printed "sim -2562047788015215:-30:-8").
TEST(RunProgress, TheClockNeverOverflows) {
  EXPECT_EQ(hms(0), "0:00:00");
  EXPECT_EQ(hms(3725.4), "1:02:05");
  EXPECT_EQ(hms(100 * 3600.0), "100:00:00");
  EXPECT_EQ(hms(7e305), "7.00e+305 s");
  EXPECT_EQ(hms(1e300 * 1e300), "inf s");
  EXPECT_EQ(hms(-1), "0:00:00");
}

TEST_F(Run, WritesAValidRunDirectory) {
  const Scenario s = tiny();
  RunOptions options;
  options.out_dir = dir_.string();
  options.replay_every = 4;  // two batched replays: 4 steps, then 2
  const RunResult r = run_training(s, options);
  EXPECT_FALSE(r.diverged);
  EXPECT_EQ(r.steps_done, 6);

  // scenario.json is the resolved scenario.
  EXPECT_EQ(nlohmann::json::parse(slurp(dir_ / "scenario.json")), to_json(s));

  // steps.jsonl: one line per step; sim_total is the running sum of sim_step;
  // validation on steps 3 and 6 (eval_every 3) only. Each rank sends, per
  // layer, its K and V block once (P - 1 = 1 ring round): 2 sequences x 32
  // tokens x 2 (K, V) x 16 x 2 bytes = 4096 bytes, so 8192 per step over 2 layers,
  // and the same for dK/dV.
  const auto steps = read_jsonl(dir_ / "steps.jsonl");
  ASSERT_EQ(steps.size(), 6u);
  double total = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& j = steps[i];
    EXPECT_EQ(j.at("step").get<int>(), int(i) + 1);
    total += j.at("sim_step_seconds").get<double>();
    EXPECT_NEAR(j.at("sim_total_seconds").get<double>(), total, 1e-12 * total);
    EXPECT_GT(j.at("sim_step_seconds").get<double>(), 0.0);
    EXPECT_GT(j.at("compute_seconds").get<double>(), 0.0);
    EXPECT_GE(j.at("exposed_comm_seconds").get<double>(), 0.0);
    EXPECT_GT(j.at("wall_seconds").get<double>(), 0.0);
    EXPECT_TRUE(std::isfinite(j.at("train_loss").get<double>()));
    EXPECT_EQ(j.contains("val_loss"), i == 2 || i == 5) << "step " << i + 1;
    EXPECT_EQ(j.at("bytes_sent_per_rank").at("kv").get<double>(), 8192.0);
    EXPECT_EQ(j.at("bytes_sent_per_rank").at("dkv").get<double>(), 8192.0);
    EXPECT_GT(j.at("bytes_sent_per_rank").at("grad_sync").get<double>(), 0.0);
  }

  // curve.csv: a header with units and one row per step.
  std::istringstream curve(slurp(dir_ / "curve.csv"));
  std::string header;
  std::getline(curve, header);
  EXPECT_EQ(header.rfind("step,sim_seconds,sim_hours,wall_seconds,train_loss,val_loss", 0), 0u) << header;
  int rows = 0;
  for (std::string line; std::getline(curve, line);) ++rows;
  EXPECT_EQ(rows, 6);

  // summary.json: uncompressed, so the measured K/V ratio is exactly 1; the
  // perplexity is exp(loss); simulated tokens/s = 6 x 128 tokens / simulated total.
  const auto summary = nlohmann::json::parse(slurp(dir_ / "summary.json"));
  EXPECT_EQ(summary.at("diverged").get<bool>(), false);
  EXPECT_EQ(summary.at("steps_done").get<int>(), 6);
  EXPECT_EQ(summary.at("kv_bytes_ratio").get<double>(), 1.0);
  EXPECT_EQ(summary.at("network_model").get<std::string>(), "ideal");
  const double val = summary.at("final_val_loss").get<double>();
  EXPECT_NEAR(summary.at("final_val_perplexity").get<double>(), std::exp(val), 1e-9 * std::exp(val));
  EXPECT_NEAR(summary.at("sim_tokens_per_s").get<double>(), 6 * 128 / total, 1e-9 * 6 * 128 / total);
  EXPECT_GE(summary.at("harness_overhead_fraction").get<double>(), 0.0);
  // The last step's physical bound: below its simulated seconds, the uplinks carry its bytes.
  const auto& bound = summary.at("bound_last_step");
  const double last = steps.back().at("sim_step_seconds").get<double>();
  EXPECT_LE(bound.at("bound_seconds").get<double>(), last);
  EXPECT_NEAR(bound.at("step_over_bound").get<double>(), last / bound.at("bound_seconds").get<double>(), 1e-12 * last);
  EXPECT_GT(bound.at("busiest_link_bytes").get<double>(), 0.0);
  // Training works: the loss after 6 steps is below the first step's.
  EXPECT_LT(steps.back().at("train_loss").get<double>(), steps.front().at("train_loss").get<double>());
}

// With profile timing the graph is the one `estimate` builds, so every step's
// simulated time is that graph's replay.
TEST_F(Run, ProfileTimingMatchesTheEstimatedGraph) {
  const Scenario s = tiny({"training.eval_every=0", "devices.timing=profile"});
  RunOptions options;
  options.out_dir = dir_.string();
  options.steps = 3;
  const RunResult r = run_training(s, options);
  const double expected = sim::replay(s.network, parallel::steady_step_graph(s)).step_seconds;
  for (const auto& j : read_jsonl(dir_ / "steps.jsonl"))
    EXPECT_NEAR(j.at("sim_step_seconds").get<double>(), expected, 1e-9 * expected);
  EXPECT_NEAR(r.sim_total_seconds, 3 * expected, 1e-9 * expected);
  // So is its bound estimate's.
  const Estimate e = estimate(s);
  const auto bound = nlohmann::json::parse(slurp(dir_ / "summary.json")).at("bound_last_step");
  EXPECT_EQ(bound.at("bound_kind"), e.bound.bound_kind);
  EXPECT_EQ(bound.at("busiest_link"), e.bound.busiest_link);
  EXPECT_DOUBLE_EQ(bound.at("busiest_link_seconds").get<double>(), e.bound.busiest_link_seconds);
  EXPECT_DOUBLE_EQ(bound.at("latency_bound_seconds").get<double>(), e.bound.latency_bound_seconds);
  EXPECT_NEAR(bound.at("compute_bound_seconds").get<double>(), e.bound.compute_bound_seconds,
              1e-12 * e.bound.compute_bound_seconds);
}

// SparseLoCo through a relay (node 3, which runs no rank): on a sync step each of
// the R = 3 replicas sends its message S once, the relay sends each on to the
// R − 1 others. The per-rank and all-ranks bytes are the replicas'; the relay's
// R(R − 1)S is its own figure, not the busiest "rank".
TEST_F(Run, RelayBytesAreReportedApartFromTheRanks) {
  const Scenario s = tiny({"parallel.context=1", "parallel.data=3", "network.nodes=4", "training.batch_size=6",
                           "training.eval_every=0",
                           R"(parallel.data_sync={"method":"sparseloco","inner_steps":2,"exchange":"relay"})",
                           R"(network.overrides=[{"node":3,"bandwidth":"10Gbps"}])"});
  RunOptions options;
  options.out_dir = dir_.string();
  options.steps = 4;
  run_training(s, options);
  const auto steps = read_jsonl(dir_ / "steps.jsonl");
  ASSERT_EQ(steps.size(), 4u);
  for (const auto& j : steps) {
    const double per_rank = j.at("bytes_sent_per_rank").at("pseudo_grad").get<double>();
    const double all = j.at("bytes_sent_all_ranks").at("pseudo_grad").get<double>();
    const double relay = j.at("bytes_sent_relay").get<double>();
    if (j.at("step").get<int>() % 2 == 1) {  // between syncs: nothing through the relay
      EXPECT_EQ(relay, 0.0);
      continue;
    }
    ASSERT_GT(per_rank, 0);
    EXPECT_EQ(all, 3 * per_rank);
    EXPECT_EQ(relay, 3 * 2 * per_rank);
    EXPECT_EQ(j.at("bytes_sent_per_rank").at("total").get<double>(), per_rank);
  }
}

// A learning rate of 1e30 blows the weights up: the run stops at the first
// non-finite loss, says so with the step number, and leaves valid files.
TEST_F(Run, DivergenceStopsWithTheStepAndValidFiles) {
  const Scenario s = tiny({"training.lr=1e30", "training.grad_clip=0", "training.steps=20"});
  RunOptions options;
  options.out_dir = dir_.string();
  const RunResult r = run_training(s, options);
  ASSERT_TRUE(r.diverged);
  EXPECT_LT(r.steps_done, 20);
  EXPECT_NE(r.message.find("step " + std::to_string(r.steps_done)), std::string::npos) << r.message;
  const auto summary = nlohmann::json::parse(slurp(dir_ / "summary.json"));
  EXPECT_TRUE(summary.at("diverged").get<bool>());
  EXPECT_EQ(summary.at("message").get<std::string>(), r.message);
  const auto steps = read_jsonl(dir_ / "steps.jsonl");
  ASSERT_EQ(int(steps.size()), r.steps_done);
  EXPECT_TRUE(steps.back().at("train_loss").is_null());  // NaN/inf is written as null
}

}  // namespace
}  // namespace lowband::train::test
