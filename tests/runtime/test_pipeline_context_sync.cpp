// Pipeline stages with context ranks under every compression.weight_sync
// (sync/replica_sync.h over each stage's context group, on the stage's own
// parameter layout): the error-feedback methods keep a stage's ranks
// bit-identical and at 100 % take the all-reduce's steps, sparse lets them drift
// between syncs, training learns, the sync state resumes bit for bit, sparse and
// sparse_update keep the subspace constraint, and the step graph (so the
// estimate) carries the sync's own collectives.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "runtime/estimate/estimate.h"
#include "runtime/model/param_layout.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/parallel/dry_steps.h"
#include "runtime/parallel/pipeline/costs.h"
#include "runtime/sync/replica_sync.h"
#include "tests/runtime/test_estimate_support.h"
#include "tests/runtime/test_numeric_support.h"
#include "tests/runtime/test_pipeline_support.h"

namespace lowband::parallel::test {
namespace {

using namespace pipeline_support;  // NOLINT(google-build-using-namespace): the tests' fixtures

constexpr int kP = 2, kC = 2;

// 2 stages x 2 context ranks, 2 microbatches, 1F1B, under `sync` (KEY=VALUE sets).
Scenario pp_cp_sync(const std::vector<std::string>& sync) {
  std::vector<std::string> sets = {"model.layers=4", "model.d_model=32", "model.heads=4", "model.kv_heads=2",
                                   "model.ffn_hidden=64", "model.seq_len=32", "model.tie_embeddings=false",
                                   "network.nodes=8", "training.batch_size=4", "training.lr=0.01",
                                   "training.lr_warmup_steps=0", "training.steps=4", "parallel.context=2",
                                   "parallel.pipeline=2", "parallel.microbatches=2"};
  sets.insert(sets.end(), sync.begin(), sync.end());
  return builtin_scenario("default", sets);
}

// The losses of `steps` steps on one batch (it learns it).
std::vector<double> train_on_one_batch(LayoutTrainer& t, const Scenario& s, int steps) {
  const TestBatch b = make_batch(s, 0);
  std::vector<double> losses;
  for (int k = 0; k < steps; ++k)
    losses.push_back(t.train_step(k, b.inputs.data(), b.targets.data(), s.training.batch_size, false).loss);
  return losses;
}

// Whether every stage's context ranks hold the same weights, bit for bit.
bool stages_identical(LayoutTrainer& t) {
  for (int st = 0; st < kP; ++st)
    for (int c = 1; c < kC; ++c)
      if (t.rank(st * kC + c).model().params_to_host() != t.rank(st * kC).model().params_to_host()) return false;
  return true;
}

class PipelineContextErrorFeedback : public ::testing::TestWithParam<std::vector<std::string>> {};

// The exchanged aggregate is the same on every rank of a stage, so the stage's
// ranks take the same steps: bit-identical weights after every step, and the
// batch is learnt.
TEST_P(PipelineContextErrorFeedback, KeepsEachStageIdenticalAndLearns) {
  const Scenario s = pp_cp_sync(GetParam());
  LayoutTrainer t(s, ComputeTiming::profile);
  const TestBatch b = make_batch(s, 0);
  std::vector<double> losses;
  for (int k = 0; k < 6; ++k) {
    losses.push_back(t.train_step(k, b.inputs.data(), b.targets.data(), s.training.batch_size, false).loss);
    EXPECT_TRUE(stages_identical(t)) << "after step " << k;
    EXPECT_TRUE(std::isfinite(losses.back()));
  }
  EXPECT_LT(losses.back(), losses.front());
  // Each rank's error buffer is its stage's (the stage's layout, not the model's).
  for (int r = 0; r < t.ranks(); ++r) {
    ASSERT_NE(t.rank(r).replica_sync(), nullptr);
    EXPECT_EQ(int64_t(t.rank(r).replica_sync()->error().size()), t.rank(r).model().param_count()) << "rank " << r;
  }
}

// The error buffers (and lowrank_grad's Q factors) resume bit for bit.
TEST_P(PipelineContextErrorFeedback, ResumesBitIdentically) {
  expect_resumes_bit_identically<LayoutTrainer>(pp_cp_sync(GetParam()), 2, 4);
}

INSTANTIATE_TEST_SUITE_P(
    Methods, PipelineContextErrorFeedback,
    ::testing::Values(std::vector<std::string>{"compression.weight_sync=topk_grad", "compression.sync_fraction=0.05"},
                      std::vector<std::string>{"compression.weight_sync=lowrank_grad", "compression.sync_fraction=0.1"},
                      std::vector<std::string>{"compression.weight_sync=sparse_grad", "compression.sync_fraction=0.1"},
                      std::vector<std::string>{"compression.weight_sync=sparse_update",
                                               "compression.sync_fraction=0.1"}),
    [](const ::testing::TestParamInfo<std::vector<std::string>>& info) {
      return info.param[0].substr(info.param[0].find('=') + 1);
    });

// At 100 % with float32 values topk_grad sums the same shares as the gradient
// all-reduce, and on two ranks every order of a sum is the same: the steps are
// the all-reduce's bit for bit (the valid-target shares and the norm included).
TEST(PipelineContextSync, FullTopkGradIsTheAllReduce) {
  const Scenario plain = pp_cp_sync({});
  const Scenario full = pp_cp_sync({"compression.weight_sync=topk_grad", "compression.sync_fraction=1",
                                    "compression.sync_value_bits=32"});
  LayoutTrainer a(plain, ComputeTiming::profile), b(full, ComputeTiming::profile);
  EXPECT_EQ(step_losses(a, plain, 0, 3), step_losses(b, full, 0, 3));
  for (int r = 0; r < a.ranks(); ++r)
    EXPECT_TRUE(a.rank(r).model().params_to_host() == b.rank(r).model().params_to_host()) << "rank " << r;
}

// sparse: each rank steps on its own gradient, so a stage's ranks drift; every
// sync_every steps a slice is averaged. At fraction 1 that sync makes them equal.
TEST(PipelineContextSync, SparseDriftsBetweenSyncsAndLearns) {
  const Scenario s = pp_cp_sync({"compression.weight_sync=sparse", "compression.sync_fraction=0.25",
                                 "compression.sync_every=8"});
  LayoutTrainer t(s, ComputeTiming::profile);
  const std::vector<double> losses = train_on_one_batch(t, s, 6);
  for (double l : losses) EXPECT_TRUE(std::isfinite(l));
  EXPECT_LT(losses.back(), losses.front());
  EXPECT_FALSE(stages_identical(t));

  const Scenario full = pp_cp_sync({"compression.weight_sync=sparse", "compression.sync_fraction=1",
                                    "compression.sync_every=2"});
  LayoutTrainer u(full, ComputeTiming::profile);
  const TestBatch b = make_batch(full, 0);
  for (int k = 0; k < 4; ++k) {
    const StepRecord rec = u.train_step(k, b.inputs.data(), b.targets.data(), full.training.batch_size, false);
    EXPECT_EQ(rec.weight_sync, k % 2 == 1) << "step " << k;
    EXPECT_EQ(stages_identical(u), k % 2 == 1) << "after step " << k;
  }
}

// Subspace boundaries: sparse and sparse_update move the weights after the step
// (a slice averaged, elementwise), so the stage projects them back into span(U):
// projecting again changes stage 0's constrained tensors by rounding only.
TEST(PipelineContextSync, OwnGradientSyncsKeepTheSubspaceConstraint) {
  for (const char* sync : {"sparse", "sparse_update"}) {
    Scenario s = pp_cp_sync({std::string("compression.weight_sync=") + sync, "compression.sync_fraction=0.25"});
    s = with_boundary(s, BoundaryMethod::subspace, 8);
    LayoutTrainer t(s, ComputeTiming::profile);
    train_on_one_batch(t, s, 3);
    for (int c = 0; c < kC; ++c) {
      model::Model& m = t.rank(c).model();  // stage 0: its layers' wo, w_down and the embedding constrained
      const std::vector<float> before = m.params_to_host();
      BoundaryConstraint(s, kernels::backend(kernels::Device::cpu)).project(m, /*grads=*/false);
      const std::vector<float> after = m.params_to_host();
      const model::ParamLayout& L = m.layout();
      std::vector<std::pair<int64_t, int64_t>> spans = {{L.embedding(), int64_t(s.model.vocab) * s.model.d_model}};
      for (int l = L.first_layer(); l < L.end_layer(); ++l) {
        spans.push_back({L.layer(l).wo, int64_t(s.model.d_model) * s.model.d_model});
        spans.push_back({L.layer(l).w_down, int64_t(s.model.d_model) * s.model.ffn_hidden});
      }
      for (const auto& [at, n] : spans)
        EXPECT_LT(test_support::rel_diff(after.data() + at, before.data() + at, n), 1e-6) << sync << " rank " << c;
    }
  }
}

// The step graph's "grad_sync" on each rank is the stage's own sync message: a
// 2-rank ring all-reduce or all-gather sends its whole payload once, so bytes ==
// weight_sync_wire_bytes of the stage's layout; sparse's only on the sync step,
// which the estimate weights 1 / sync_every.
TEST(PipelineContextSync, GraphCarriesTheStagesSyncMessages) {
  Scenario s = testing::small_pp_scenario(kP, 2);
  s.parallel.context = kC;
  s.network.nodes = kP * kC;
  for (WeightSync w : {WeightSync::sparse_grad, WeightSync::topk_grad, WeightSync::lowrank_grad}) {
    s.compression.weight_sync = w;
    const sim::StepGraph g = steady_step_graph(s);
    for (int st = 0; st < kP; ++st) {
      const model::ParamLayout stage(s.model, {st * 2, 2, st == 0, st == kP - 1});
      const double expected = sync::weight_sync_wire_bytes(s, stage);
      for (int c = 0; c < kC; ++c)
        EXPECT_NEAR(g.bytes_sent(st * kC + c, "grad_sync"), expected, 1e-9 * expected)
            << weight_sync_name(w) << " stage " << st;
    }
  }
  s.compression.weight_sync = WeightSync::sparse;
  s.compression.sync_every = 4;
  EXPECT_GT(steady_step_graph(s, true).bytes_sent(0, "grad_sync"), 0);
  EXPECT_EQ(steady_step_graph(s, false).bytes_sent(0, "grad_sync"), 0);
  const Estimate e = lowband::estimate(s);
  ASSERT_TRUE(e.sync.has_value());
  EXPECT_EQ(e.sync->method, "sparse");
  EXPECT_EQ(e.sync->inner_steps, 4);
  EXPECT_GE(e.sync->sync_step_seconds, e.sync->inner_step_seconds);
}

}  // namespace
}  // namespace lowband::parallel::test
