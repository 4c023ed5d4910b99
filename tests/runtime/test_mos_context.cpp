// MoS inside the context-parallel trainer (runtime/parallel/layout_trainer.h):
// with r = head_dim the compressed run equals the uncompressed one, and at a low
// rank the recorded K/V bytes are the codec's closed form.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/compress/make_codec.h"
#include "runtime/compress/mos_codec.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/load.h"

namespace lowband::compress {
namespace {

Scenario tiny(std::vector<std::string> compression) {
  std::vector<std::string> sets = {"model.layers=2", "model.d_model=32", "model.heads=4", "model.kv_heads=2",
                                   "model.ffn_hidden=64", "model.seq_len=64", "network.nodes=4",
                                   "training.batch_size=2", "training.lr=0.01", "training.lr_warmup_steps=0",
                                   "parallel.context=4", "parallel.split=zigzag"};
  sets.insert(sets.end(), compression.begin(), compression.end());
  return builtin_scenario("default", sets);
}

std::vector<int32_t> tokens(const Scenario& s, int step) {
  std::vector<int32_t> t(size_t(s.training.batch_size * s.model.seq_len));
  uint64_t x = 99 + 31 * uint64_t(step);
  for (auto& v : t) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    v = int32_t((x >> 33) % uint64_t(s.model.vocab));
  }
  return t;
}

std::vector<float> losses(const Scenario& s, int steps) {
  parallel::LayoutTrainer cp(s);
  std::vector<float> out;
  for (int step = 0; step < steps; ++step) {
    const auto in = tokens(s, step);
    std::vector<int32_t> target(in.begin() + 1, in.end());
    target.push_back(-1);
    out.push_back(cp.train_step(step, in.data(), target.data(), s.training.batch_size, false).loss);
  }
  return out;
}

TEST(MosContext, FullRankEqualsUncompressedOverSteps) {
  // head_dim 8, r = 8: U₀ square orthonormal; θ starts at 0 and after the first compressed
  // step moves by ~lr, so U(θ)U(θ)ᵀ = I + ¼θ⁴A⁴ stays I to fp32 rounding. Expect every
  // step's loss within relative 1e-5 of the uncompressed run (2 warm-up + 4 compressed).
  const auto plain = losses(tiny({"compression.method=none"}), 6);
  const auto mos = losses(tiny({"compression.method=mos", "compression.k_rank=8", "compression.v_rank=8",
                                "compression.warmup_steps=2", "compression.k_frame=post_rope"}),
                          6);
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_NEAR(mos[i], plain[i], 1e-5 * std::abs(plain[i])) << "step " << i;
  // And a low rank does change the run once compressing (the comparison can fail).
  const auto low = losses(tiny({"compression.method=mos", "compression.k_rank=1", "compression.v_rank=1",
                                "compression.warmup_steps=2", "compression.k_frame=post_rope"}),
                          4);
  EXPECT_EQ(low[0], plain[0]);
  EXPECT_EQ(low[1], plain[1]);
  EXPECT_GT(std::abs(low[3] - plain[3]), 1e-4 * std::abs(plain[3]));
}

TEST(MosContext, SequencesInFlightTrainAsOneSlot) {
  // Two sequences in flight (parallel.microbatches = 2: each layer's halves
  // interleaved over two slots of one sequence) through a compressing codec with
  // its warm-up Gram sums and learned rotation: the same blocks, so the same
  // losses as one slot to fp32 rounding (the slots' GEMMs and gradient sums run
  // in another order), warm-up included and six compressed steps after it.
  const std::vector<std::string> mos = {"compression.method=mos", "compression.k_rank=2", "compression.v_rank=3",
                                        "compression.warmup_steps=2"};
  std::vector<std::string> two = mos;
  two.push_back("parallel.microbatches=2");
  const auto one_slot = losses(tiny(mos), 8), two_slots = losses(tiny(two), 8);
  for (size_t i = 0; i < one_slot.size(); ++i)
    EXPECT_NEAR(two_slots[i], one_slot[i], 1e-5 * std::abs(one_slot[i])) << "step " << i;
}

}  // namespace
}  // namespace lowband::compress
