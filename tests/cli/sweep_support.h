#pragma once
// Shared by the tests of sweeps on a cluster (test_sweep_slurm_cli.cpp,
// test_slurm_cluster_cli.cpp): a tiny context-parallel MoS training and the check
// that two sweep directories say the same of every point, number for number.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/slurp.h"

namespace lowband::test_support {

// 2 context ranks, d_model 32, profile timing (simulated times do not depend on
// how busy this CPU is); add the axes, --steps and training.checkpoint_every.
inline const std::string kTinySweep =
    " --set model.layers=2 --set model.d_model=32 --set model.heads=4 --set model.kv_heads=2"
    " --set model.ffn_hidden=64 --set model.seq_len=64 --set parallel.context=2 --set network.nodes=2"
    " --set devices.timing=profile --set compression.method=mos --set compression.warmup_steps=1"
    " --set compression.fit_during_lr_warmup=true";

inline nlohmann::json read_json(const std::filesystem::path& p) { return nlohmann::json::parse(slurp(p)); }

inline int lines_of(const std::filesystem::path& p) {
  std::ifstream in(p);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// The two index.json are equal (but for their source); every point of the sweep in `a` is done, trained where `b`'s was, with `steps`
// lines in its steps.jsonl (none trained twice) and b's losses, times and bytes.
inline void expect_same_sweep(const std::filesystem::path& a, const std::filesystem::path& b, int steps) {
  nlohmann::json ia = read_json(a / "index.json"), ib = read_json(b / "index.json");
  // But for "source": what the last writer read, a resumed sweep's DIR/sweep.json.
  ia.erase("source"), ib.erase("source");
  EXPECT_EQ(ia, ib) << "index.json differs";
  ASSERT_EQ(ia.at("points").size(), ib.at("points").size());
  for (size_t i = 0; i < ia.at("points").size(); ++i) {
    const nlohmann::json &p = ia.at("points")[i], &q = ib.at("points")[i];
    EXPECT_EQ(p.at("status"), "done") << p.dump();
    EXPECT_EQ(p.at("run_dir"), q.at("run_dir"));
    EXPECT_EQ(p.at("trained_in"), q.at("trained_in"));
    const std::string run_dir = p.at("run_dir").get<std::string>();
    EXPECT_EQ(lines_of(a / run_dir / "steps.jsonl"), steps) << run_dir << ": a step trained twice, or missing";
    const nlohmann::json sa = read_json(a / run_dir / "summary.json"), sb = read_json(b / run_dir / "summary.json");
    for (const char* key : {"final_train_loss", "final_val_loss", "sim_total_seconds", "bytes_sent_per_rank_per_step"})
      EXPECT_EQ(sa.at(key), sb.at(key)) << run_dir << " " << key;
  }
}

}  // namespace lowband::test_support
