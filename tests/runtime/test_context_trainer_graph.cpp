// Two independent graphs of one context-parallel step: the one assembled from
// what the ranks of a real step did (their messages and collectives, recorded
// by comm::RecordingCommunicator) and the one `estimate` builds from the shapes
// (steady_step_graph: the same trainer run dry, dry_steps.h).
// They must hold the same multiset of (source, destination, bytes, kind)
// transfers — bytes in the first come from the codecs' real messages. With
// measured timing every compute task carries a measured (positive) time; with
// profile timing the two are the same graph task for task (kind, ranks, bytes,
// seconds, dependencies), for every split, exchange, overlap, codec and weight
// sync, and `estimate`'s step is the recorded steps' replayed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/compress/make_codec.h"
#include "runtime/estimate/estimate.h"
#include "runtime/parallel/dry_steps.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/load.h"
#include "sim/replay.h"
#include "tests/runtime/test_graph_support.h"

namespace lowband::parallel::test {
namespace {

Scenario small(const std::vector<std::string>& extra) { return test_support::small_graph_scenario(extra); }

std::vector<int32_t> tokens(const Scenario& s) {
  std::vector<int32_t> t(size_t(s.training.batch_size * s.model.seq_len));
  for (size_t i = 0; i < t.size(); ++i) t[i] = int32_t((i * 37 + 11) % 256);
  return t;
}

using test_support::expect_same_tasks;
using test_support::transfers;

class RecordedGraph : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(RecordedGraph, MatchesTheScheduleTransferForTransfer) {
  const Scenario s = small(GetParam());
  LayoutTrainer cp(s);
  const std::vector<int32_t> in = tokens(s);
  for (int step = 0; step < 2; ++step) {  // with a sparse sync every 2 steps: one without, one with
    const StepRecord rec = cp.train_step(step, in.data(), in.data(), s.training.batch_size);
    const sim::StepGraph expected = steady_step_graph(s, rec.weight_sync);
    // Expected: identical transfers (bytes of K/V equal uncompressed n·2·d_kv·2
    // per message for the identity codec, and the same codec's message_bytes for
    // MoS; the loss, gradient buckets and codec sums as ring all-reduces).
    const auto got = transfers(rec.graph), want = transfers(expected);
    EXPECT_EQ(got.size(), want.size()) << "step " << step;
    EXPECT_EQ(got, want) << "step " << step;
    for (const sim::Task& a : rec.graph.tasks()) {
      // (collectives' own compute tasks are zero-time joins)
      static const std::vector<std::string> joins = {"grad_sync", "loss", "codec_grad"};
      if (a.kind == sim::TaskKind::compute && std::find(joins.begin(), joins.end(), a.kind_tag) == joins.end()) {
        EXPECT_GT(a.seconds, 0.0) << "unmeasured task " << a.kind_tag;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Configs, RecordedGraph,
    ::testing::Values(std::vector<std::string>{"parallel.context=4", "parallel.split=zigzag", "parallel.exchange=ring"},
                      std::vector<std::string>{"parallel.context=4", "parallel.split=contiguous",
                                               "parallel.exchange=all_gather"},
                      std::vector<std::string>{"parallel.context=3", "model.seq_len=60", "parallel.split=zigzag",
                                               "parallel.exchange=ring", "parallel.overlap=false"},
                      std::vector<std::string>{"parallel.context=4", "compression.weight_sync=sparse",
                                               "compression.sync_every=2"},
                      // MoS from step 0: the codec's real messages (C and theta) must be
                      // the schedule's n·(k_rank + v_rank)·kv_heads·2 + 4 bytes per theta.
                      std::vector<std::string>{"parallel.context=4", "compression.method=mos",
                                               "compression.k_ratio=0.75", "compression.v_ratio=0.5",
                                               "compression.warmup_steps=0"},
                      // Two sequences in flight, each slot's own messages.
                      std::vector<std::string>{"parallel.context=4", "parallel.microbatches=2", "compression.method=mos",
                                               "compression.k_ratio=0.75", "compression.v_ratio=0.5",
                                               "compression.warmup_steps=0"}));

class ProfileTimedGraph : public ::testing::TestWithParam<std::vector<std::string>> {};

// A whole sync period of steps (one with a sparse sync every c steps is its last),
// each the estimate's graph task for task; estimate() then averages what the
// recorded steps replay to.
TEST_P(ProfileTimedGraph, IsTheEstimatesGraphTaskForTask) {
  const Scenario s = small(GetParam());
  LayoutTrainer cp(s, ComputeTiming::profile);
  const std::vector<int32_t> in = tokens(s);
  const int period = s.compression.weight_sync == WeightSync::sparse ? s.compression.sync_every : 1;
  double replayed = 0;
  for (int step = 0; step < period; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const StepRecord rec = cp.train_step(step, in.data(), in.data(), s.training.batch_size);
    EXPECT_EQ(rec.weight_sync, step == period - 1);
    expect_same_tasks(steady_step_graph(s, rec.weight_sync), rec.graph);
    replayed += sim::replay(s.network, rec.graph).step_seconds / period;
  }
  EXPECT_NEAR(estimate(s).step_seconds, replayed, 1e-12 * replayed);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, ProfileTimedGraph,
    ::testing::Values(
        std::vector<std::string>{"parallel.context=4"},
        // A fully masked block (contiguous) is still received, and decoded, before the rank goes on.
        std::vector<std::string>{"parallel.context=4", "parallel.split=contiguous"},
        std::vector<std::string>{"parallel.context=3", "model.seq_len=60", "parallel.split=contiguous",
                                 "parallel.exchange=all_gather", "parallel.overlap=false"},
        std::vector<std::string>{"parallel.context=4", "parallel.exchange=ring", "parallel.overlap=false"},
        std::vector<std::string>{"parallel.context=4", "parallel.placement=[7,2,5,0]"},
        std::vector<std::string>{"parallel.context=1"},
        std::vector<std::string>{"parallel.context=4", "compression.weight_sync=sparse", "compression.sync_every=2"},
        std::vector<std::string>{"parallel.context=4", "compression.weight_sync=sparse_grad"},
        std::vector<std::string>{"parallel.context=4", "compression.weight_sync=topk_grad"},
        std::vector<std::string>{"parallel.context=4", "compression.weight_sync=sparse_update"},
        std::vector<std::string>{"parallel.context=4", "compression.weight_sync=lowrank_grad"},
        // The codec's error sums (deferred) and its gradients after the sparse average.
        std::vector<std::string>{"parallel.context=4", "parallel.split=contiguous", "compression.method=mos",
                                 "compression.k_rank=4", "compression.v_rank=4", "compression.warmup_steps=0",
                                 "compression.weight_sync=sparse", "compression.sync_every=3"},
        std::vector<std::string>{"parallel.context=4", "compression.method=quantize", "compression.bits=4"},
        // The owner attends to its own reconstruction (the decode is in its qkv span).
        std::vector<std::string>{"parallel.context=4", "compression.method=mos", "compression.k_rank=4",
                                 "compression.v_rank=4", "compression.warmup_steps=0",
                                 "compression.owner_kv=reconstructed", "parallel.microbatches=2"},
        // Sequences in flight: each layer's halves interleaved over the slots.
        std::vector<std::string>{"parallel.context=4", "parallel.microbatches=2"},
        std::vector<std::string>{"parallel.context=3", "model.seq_len=60", "parallel.exchange=all_gather",
                                 "training.batch_size=3", "parallel.microbatches=3"},
        std::vector<std::string>{"parallel.context=4", "parallel.microbatches=2", "parallel.overlap=false",
                                 "compression.method=mos", "compression.k_rank=4", "compression.v_rank=4",
                                 "compression.warmup_steps=0", "compression.weight_sync=topk_grad"}));

TEST(RecordedGraph, ProfileTimingTakesTheDeviceProfilesSeconds) {
  const Scenario s = small({"parallel.context=4"});
  LayoutTrainer cp(s, ComputeTiming::profile);
  const std::vector<int32_t> in = tokens(s);
  const StepRecord rec = cp.train_step(0, in.data(), in.data(), s.training.batch_size);
  const sim::StepGraph expected = steady_step_graph(s, true);
  for (int r = 0; r < 4; ++r) {
    EXPECT_GT(expected.compute_seconds(r), 0.0);
    EXPECT_NEAR(rec.graph.compute_seconds(r), expected.compute_seconds(r), 1e-12 * expected.compute_seconds(r)) << r;
  }
}

// Sparse sync with fraction 1 every 2 steps: after step 0 (no sync) the replicas
// differ (each stepped on its own gradient), after step 1 every parameter is the
// mean over ranks, so the replicas are bit-identical again.
TEST(SparseSync, FullFractionMakesReplicasEqualOnSyncSteps) {
  const Scenario s = small({"parallel.context=4", "compression.weight_sync=sparse", "compression.sync_every=2",
                            "compression.sync_fraction=1"});
  LayoutTrainer cp(s);
  const std::vector<int32_t> in = tokens(s);
  const size_t bytes = size_t(cp.model(0).param_count()) * sizeof(float);
  cp.train_step(0, in.data(), in.data(), s.training.batch_size, false);
  EXPECT_NE(std::memcmp(cp.model(1).params(), cp.model(0).params(), bytes), 0);
  cp.train_step(1, in.data(), in.data(), s.training.batch_size, false);
  for (int r = 1; r < 4; ++r) EXPECT_EQ(std::memcmp(cp.model(r).params(), cp.model(0).params(), bytes), 0);
}

}  // namespace
}  // namespace lowband::parallel::test
