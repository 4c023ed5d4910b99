// LayoutTrainer::save_state / load_state: a trainer rebuilt from the scenario and
// given the state saved after step c takes steps c.. exactly (bit for bit) like the
// trainer that never stopped — uncompressed, MoS with the state taken before, at
// and after the warm-up's end, learned and random rotation, top-k, and sparse
// weight sync (replicas that differ). Equal ranks are saved once; a state of
// another shape is refused.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "common/binary_io.h"
#include "runtime/compress/make_codec.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/load.h"

namespace lowband::parallel::test {
namespace {

Scenario tiny(std::vector<std::string> extra) {
  std::vector<std::string> sets = {"model.layers=2",        "model.d_model=32",    "model.heads=4",
                                   "model.kv_heads=2",      "model.ffn_hidden=64", "model.seq_len=64",
                                   "network.nodes=4",       "parallel.context=2",  "training.batch_size=2",
                                   "training.lr=0.01",      "training.lr_warmup_steps=0", "training.steps=8"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return builtin_scenario("default", sets);
}

std::vector<int32_t> tokens(const Scenario& s, int k, int shift) {
  std::vector<int32_t> out;
  uint64_t x = 777 + 131 * uint64_t(k) + uint64_t(shift);
  for (int64_t i = 0; i < s.training.batch_size * s.model.seq_len; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    out.push_back(int32_t((x >> 33) % uint64_t(s.model.vocab)));
  }
  return out;
}

struct StepFigures {
  double loss, grad_norm, lr;
};

StepFigures step(LayoutTrainer& t, const Scenario& s, int k) {
  const auto in = tokens(s, k, 0), tg = tokens(s, k, 1);
  const StepRecord r = t.train_step(k, in.data(), tg.data(), s.training.batch_size, /*record=*/false);
  return {r.loss, r.grad_norm, r.lr};
}

std::string saved(const LayoutTrainer& t) {
  std::ostringstream out;
  t.save_state(out);
  return out.str();
}

struct Case {
  const char* name;
  std::vector<std::string> sets;
  int checkpoint_after;  // steps taken before the state is saved
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class TrainerState : public ::testing::TestWithParam<Case> {};

TEST_P(TrainerState, RestoredTrainerContinuesBitForBit) {
  const Case c = GetParam();
  const Scenario s = tiny(c.sets);
  const int steps = 7;
  LayoutTrainer straight(s, ComputeTiming::profile);
  std::vector<StepFigures> expected;
  for (int k = 0; k < steps; ++k) expected.push_back(step(straight, s, k));

  LayoutTrainer first(s, ComputeTiming::profile);
  for (int k = 0; k < c.checkpoint_after; ++k) step(first, s, k);
  std::istringstream state(saved(first));
  LayoutTrainer resumed(s, ComputeTiming::profile);
  resumed.load_state(state);
  EXPECT_EQ(state.peek(), std::char_traits<char>::eof()) << "load_state left bytes unread";
  for (int k = c.checkpoint_after; k < steps; ++k) {
    const StepFigures got = step(resumed, s, k);
    // Bitwise: memcmp, not a tolerance.
    EXPECT_EQ(std::memcmp(&got.loss, &expected[size_t(k)].loss, sizeof(double)), 0)
        << "step " << k << ": " << got.loss << " vs " << expected[size_t(k)].loss;
    EXPECT_EQ(std::memcmp(&got.grad_norm, &expected[size_t(k)].grad_norm, sizeof(double)), 0) << "step " << k;
    EXPECT_EQ(got.lr, expected[size_t(k)].lr) << "step " << k;
  }
  const size_t count = size_t(straight.model(0).param_count());
  for (int r = 0; r < s.parallel.context; ++r)
    EXPECT_EQ(std::memcmp(resumed.model(r).params(), straight.model(r).params(), count * sizeof(float)), 0)
        << "rank " << r;
  // The saved state itself is reproducible: the resumed trainer now saves what the
  // uninterrupted one does.
  EXPECT_TRUE(saved(resumed) == saved(straight));
}

INSTANTIATE_TEST_SUITE_P(
    Codecs, TrainerState,
    ::testing::Values(
        Case{"none", {}, 3},
        Case{"mos_after_warmup",
             {"compression.method=mos", "compression.k_rank=2", "compression.v_rank=4", "compression.warmup_steps=2"},
             4},
        // Saved after the last warm-up step: the Gram sums are taken, U0 not yet fitted.
        Case{"mos_at_warmup_end",
             {"compression.method=mos", "compression.k_rank=2", "compression.v_rank=4", "compression.warmup_steps=3"},
             3},
        Case{"mos_inside_warmup",
             {"compression.method=mos", "compression.k_rank=2", "compression.v_rank=4", "compression.warmup_steps=4"},
             2},
        Case{"mos_owner_reconstructed",
             {"compression.method=mos", "compression.k_rank=2", "compression.v_rank=4", "compression.warmup_steps=2",
              "compression.owner_kv=reconstructed"},
             3},
        Case{"mos_random_rotation",
             {"compression.method=mos", "compression.k_rank=2", "compression.v_rank=4", "compression.warmup_steps=1",
              "compression.rotation=random"},
             3},
        Case{"mos_two_generators",
             {"compression.method=mos", "compression.k_rank=2", "compression.v_rank=4", "compression.warmup_steps=2",
              "compression.rotation_params=2"},
             3},
        Case{"mos_two_random_generators",
             {"compression.method=mos", "compression.k_rank=2", "compression.v_rank=4", "compression.warmup_steps=1",
              "compression.rotation=random", "compression.rotation_params=2"},
             3},
        Case{"topk", {"compression.method=topk", "compression.topk_fraction=0.3"}, 3},
        Case{"sparse_sync",
             {"parallel.context=4", "compression.weight_sync=sparse", "compression.sync_every=2",
              "compression.sync_fraction=0.2"},
             3}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(TrainerStateErrors, SparseReplicasAreSavedApartEqualOnesOnce) {
  // After an odd number of steps with a sync every 2 steps the 4 replicas and their
  // optimisers differ: the state carries each (4 x params, m, v). Under all-reduce
  // they are equal: rank 0's once, the others as references.
  const Scenario sparse = tiny({"parallel.context=4", "compression.weight_sync=sparse", "compression.sync_every=2"});
  LayoutTrainer t(sparse, ComputeTiming::profile);
  step(t, sparse, 0);
  const size_t bytes = size_t(t.model(0).param_count()) * sizeof(float);
  ASSERT_NE(std::memcmp(t.model(1).params(), t.model(0).params(), bytes), 0);
  EXPECT_GT(saved(t).size(), 12 * bytes);

  const Scenario dense = tiny({"parallel.context=4"});
  LayoutTrainer all_reduce(dense, ComputeTiming::profile);
  step(all_reduce, dense, 0);
  EXPECT_GT(saved(all_reduce).size(), 3 * bytes);
  EXPECT_LT(saved(all_reduce).size(), 4 * bytes);
}

TEST(TrainerStateErrors, EqualRanksOfOtherReplicasAreSavedOnce) {
  // 2 synchronous replicas of 2 context ranks: all 4 ranks hold the same weights
  // and moments (no codec state), so the state holds one rank's and 3 references,
  // as one replica's does.
  const Scenario one = tiny({"parallel.context=2"}), two = tiny({"parallel.data=2", "parallel.context=2"});
  LayoutTrainer single(one, ComputeTiming::profile), replicas(two, ComputeTiming::profile);
  step(single, one, 0);
  step(replicas, two, 0);
  const size_t bytes = size_t(replicas.model(0).param_count()) * sizeof(float);
  EXPECT_GT(saved(replicas).size(), 3 * bytes);
  EXPECT_LT(saved(replicas).size(), 4 * bytes);
  EXPECT_LT(saved(replicas).size(), saved(single).size() + 64);
}

TEST(TrainerStateErrors, AnotherShapeOrATruncatedStateIsRefused) {
  const Scenario s = tiny({});
  LayoutTrainer t(s, ComputeTiming::profile);
  step(t, s, 0);
  const std::string state = saved(t);

  const Scenario wider = tiny({"model.ffn_hidden=96"});
  LayoutTrainer other(wider, ComputeTiming::profile);
  std::istringstream in(state);
  EXPECT_THROW(other.load_state(in), binary::BinaryFormatError);

  const Scenario mos = tiny({"compression.method=mos", "compression.k_rank=2", "compression.v_rank=4"});
  LayoutTrainer with_mos(mos, ComputeTiming::profile);
  std::istringstream in_mos(state);
  EXPECT_THROW(with_mos.load_state(in_mos), binary::BinaryFormatError);  // another codec

  LayoutTrainer same(s, ComputeTiming::profile);
  std::istringstream cut(state.substr(0, state.size() / 2));
  EXPECT_THROW(same.load_state(cut), binary::BinaryFormatError);
}

}  // namespace
}  // namespace lowband::parallel::test
