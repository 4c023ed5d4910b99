#pragma once
// A 2-layer model over 4 zigzag context ranks, built-in "default" scenario with
// `compression` overrides, and deterministic token batches: what the K/V codec
// tests train and compare against the uncompressed run.
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/load.h"

namespace lowband::test_support {

inline Scenario tiny_context(std::vector<std::string> compression) {
  std::vector<std::string> sets = {"model.layers=2", "model.d_model=32", "model.heads=4", "model.kv_heads=2",
                                   "model.ffn_hidden=64", "model.seq_len=64", "network.nodes=4",
                                   "training.batch_size=2", "training.lr=0.01", "training.lr_warmup_steps=0",
                                   "parallel.context=4", "parallel.split=zigzag"};
  sets.insert(sets.end(), compression.begin(), compression.end());
  return builtin_scenario("default", sets);
}

inline std::vector<int32_t> step_tokens(const Scenario& s, int step) {
  std::vector<int32_t> t(size_t(s.training.batch_size * s.model.seq_len));
  uint64_t x = 99 + 31 * uint64_t(step);
  for (auto& v : t) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    v = int32_t((x >> 33) % uint64_t(s.model.vocab));
  }
  return t;
}

// Each step's training loss over `steps` steps from a fresh trainer.
inline std::vector<float> step_losses(const Scenario& s, int steps) {
  parallel::LayoutTrainer cp(s);
  std::vector<float> out;
  for (int step = 0; step < steps; ++step) {
    const auto in = step_tokens(s, step);
    std::vector<int32_t> target(in.begin() + 1, in.end());
    target.push_back(-1);
    out.push_back(cp.train_step(step, in.data(), target.data(), s.training.batch_size, false).loss);
  }
  return out;
}

}  // namespace lowband::test_support
