// Context parallelism over in-process ranks must be an exact re-arrangement of
// the single-device computation: with compression off, P = 1, 2, 4, 8 ranks
// (contiguous and zigzag, ring and all-gather) give the single-device model's
// loss, gradients and updated parameters to fp32 rounding, and the replicas stay
// bit-identical after the all-reduce; so do 2 or 3 sequences in flight per rank.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/compress/make_codec.h"
#include "runtime/model/model.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "runtime/parallel/context/rank.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/load.h"
#include "runtime/sync/replica_sync.h"
#include "tests/runtime/test_numeric_support.h"

namespace lowband::parallel::test {
namespace {

using lowband::test_support::rel_diff;

Scenario tiny(int P, const std::string& split, const std::string& exchange,
              std::vector<std::string> extra = {}) {
  std::vector<std::string> sets = {
      "model.layers=2",        "model.d_model=32",   "model.heads=4",
      "model.kv_heads=2",      "model.ffn_hidden=64", "model.seq_len=64",
      "network.nodes=8",       "training.batch_size=2", "training.lr=0.01",
      "training.lr_warmup_steps=0", "training.steps=4",
      "parallel.context=" + std::to_string(P), "parallel.split=" + split,
      "parallel.exchange=" + exchange};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return builtin_scenario("default", sets);
}

// Batch k: pseudo-random tokens; every 7th target ignored so ranks hold
// different numbers of valid targets (tests the dloss = valid_local/valid_global share).
struct TestBatch {
  std::vector<int32_t> inputs, targets;
};
TestBatch make_batch(const Scenario& s, int k) {
  TestBatch b;
  const int64_t n = s.training.batch_size * s.model.seq_len;
  uint64_t x = 12345 + 977 * uint64_t(k);
  for (int64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    b.inputs.push_back(int32_t((x >> 33) % uint64_t(s.model.vocab)));
  }
  for (int64_t i = 0; i < n; ++i) b.targets.push_back(i % 7 == 3 ? -1 : b.inputs[size_t((i + 1) % n)]);
  return b;
}

// Forward and backward over the context ranks, without the optimiser: afterwards
// every rank's grads() hold its own share, so their sum is the gradient of the
// global mean loss. Returns rank 0's loss (every rank has the mean).
float forward_backward(LayoutTrainer& t, const int32_t* inputs, const int32_t* targets, int sequences) {
  std::vector<float> loss(static_cast<size_t>(t.ranks()));
  t.on_ranks([&](int r, RankProgram& p, comm::Communicator& comm) {
    loss[size_t(r)] =
        dynamic_cast<ContextRank&>(p).forward_backward(comm, inputs, targets, sequences, /*sync_gradients=*/false);
  });
  return loss[0];
}

// Sums the ranks' gradients (the all-reduce's order) and gives every rank the sum.
void all_reduce_gradients(LayoutTrainer& t) {
  if (t.ranks() < 2) return;
  t.on_ranks([&](int, RankProgram& p, comm::Communicator& comm) {
    auto& rank = dynamic_cast<ContextRank&>(p);
    model::Model& m = rank.model();
    for (const sync::GradBucket& b : sync::gradient_buckets(m.layout())) rank.sync().all_reduce_bucket(comm, m, b);
    rank.sync().join_buckets(comm);
  });
}

struct Case {
  int P;
  const char* split;
  const char* exchange;
  int in_flight = 1;  // parallel.microbatches: sequences in flight per rank
};

class EqualsSingleDevice : public ::testing::TestWithParam<Case> {};

TEST_P(EqualsSingleDevice, LossGradientsAndParametersOverSteps) {
  const Case c = GetParam();
  const Scenario s = tiny(c.P, c.split, c.exchange,
                         {"training.batch_size=" + std::to_string(2 * c.in_flight),
                          "parallel.microbatches=" + std::to_string(c.in_flight)});
  LayoutTrainer cp(s);
  model::Model ref(s.model, s.training.seed);
  model::LocalAttention local;
  optim::AdamW ref_opt(ref.layout(), optim::optimizer_config_from(s.training));
  const optim::LrSchedule lr = optim::lr_schedule_from(s.training);
  const int64_t count = ref.param_count();
  for (int step = 0; step < 3; ++step) {
    const TestBatch b = make_batch(s, step);
    model::TokenBatch tb;
    tb.inputs = b.inputs.data(), tb.targets = b.targets.data();
    tb.sequences = s.training.batch_size, tb.tokens = s.model.seq_len;
    const float ref_loss = ref.forward_backward(tb, local, 1.0f);

    // Expected: the same mean loss and, after the all-reduce, the same gradient
    // on every replica, to fp32 rounding (relative 1e-5).
    const float loss = forward_backward(cp, b.inputs.data(), b.targets.data(), s.training.batch_size);
    EXPECT_NEAR(loss, ref_loss, 1e-5 * std::fabs(ref_loss)) << "step " << step;
    all_reduce_gradients(cp);
    for (int r = 0; r < c.P; ++r)
      EXPECT_LT(rel_diff(cp.model(r).grads(), ref.grads(), count), 1e-5) << "rank " << r << " step " << step;

    // A whole training step recomputes the same loss, then every replica takes
    // the same AdamW step as the single-device model.
    ref_opt.step(ref.params(), ref.grads(), lr.at(step + 1));
    const StepRecord rec = cp.train_step(step, b.inputs.data(), b.targets.data(), s.training.batch_size);
    EXPECT_NEAR(rec.loss, ref_loss, 1e-5 * std::fabs(ref_loss));
    EXPECT_TRUE(rec.weight_sync);
    for (int r = 0; r < c.P; ++r) {
      EXPECT_LT(rel_diff(cp.model(r).params(), ref.params(), count), 1e-5) << "rank " << r;
      EXPECT_EQ(std::memcmp(cp.model(r).params(), cp.model(0).params(), size_t(count) * sizeof(float)), 0)
          << "replica " << r << " differs from replica 0 after the all-reduce";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Ranks, EqualsSingleDevice,
    ::testing::Values(Case{2, "contiguous", "ring"},
                      Case{4, "contiguous", "ring"}, Case{8, "contiguous", "ring"},
                      Case{1, "zigzag", "ring"}, Case{2, "zigzag", "ring"}, Case{4, "zigzag", "ring"},
                      Case{8, "zigzag", "ring"}, Case{2, "contiguous", "all_gather"},
                      Case{4, "zigzag", "all_gather"}, Case{8, "zigzag", "all_gather"},
                      Case{8, "contiguous", "all_gather"},
                      // Several sequences in flight: each layer's halves interleaved over the slots.
                      Case{2, "contiguous", "ring", 2}, Case{4, "zigzag", "ring", 2}, Case{4, "zigzag", "ring", 3},
                      Case{4, "zigzag", "all_gather", 2}, Case{8, "contiguous", "all_gather", 3}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return std::string(info.param.split) + "_" + info.param.exchange + "_P" + std::to_string(info.param.P) +
             (info.param.in_flight > 1 ? "_in_flight" + std::to_string(info.param.in_flight) : "");
    });

}  // namespace
}  // namespace lowband::parallel::test
