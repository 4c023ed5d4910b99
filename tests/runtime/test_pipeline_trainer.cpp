// Pipeline parallelism over in-process stages must be an exact re-arrangement
// of the single-device computation: uncompressed, P = 2 and 4 stages (even and
// uneven splits), GPipe and 1F1B, 1, 2 and 4 microbatches give the single-device
// model's loss and gradients to fp32 rounding. With subspace boundaries the
// pipeline equals the single-device model under the same constraint (the
// boundary is exact), its gradient through the boundary matches finite
// differences, and the boundary messages have the formulas' sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/compress/boundary_codec.h"
#include "runtime/model/model.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/load.h"
#include "tests/runtime/test_numeric_support.h"
#include "tests/runtime/test_pipeline_support.h"

namespace lowband::parallel::test {
namespace {

using lowband::test_support::rel_diff;
using namespace pipeline_support;  // NOLINT(google-build-using-namespace): the tests' fixtures

struct Case {
  int P, M;
  PipelineSchedule schedule;
  std::vector<int> stage_layers;
};

class PipelineEqualsSingleDevice : public ::testing::TestWithParam<Case> {};

TEST_P(PipelineEqualsSingleDevice, LossAndGradients) {
  const Case& c = GetParam();
  const Scenario s = tiny_pipeline(c.P, c.M, c.schedule, c.stage_layers);
  const TestBatch b = make_batch(s, 0);
  const Reference ref = reference(s, b);
  LayoutTrainer t(s, ComputeTiming::profile);
  const StepRecord rec = t.train_step(0, b.inputs.data(), b.targets.data(), s.training.batch_size);
  EXPECT_NEAR(rec.loss, ref.loss, 1e-5 * std::abs(ref.loss));
  expect_gradients_match(t, ref, 1e-5);
  // The stages' parameters together are the whole model's.
  int64_t total = 0;
  for (int st = 0; st < c.P; ++st) total += t.rank(st).model().param_count();
  EXPECT_EQ(total, ref.model->param_count());
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, PipelineEqualsSingleDevice,
    ::testing::Values(Case{2, 1, PipelineSchedule::gpipe, {}}, Case{2, 2, PipelineSchedule::gpipe, {}},
                      Case{2, 4, PipelineSchedule::one_f_one_b, {}}, Case{4, 1, PipelineSchedule::one_f_one_b, {}},
                      Case{4, 4, PipelineSchedule::gpipe, {}}, Case{4, 4, PipelineSchedule::one_f_one_b, {}},
                      Case{3, 2, PipelineSchedule::one_f_one_b, {1, 2, 1}},
                      Case{2, 4, PipelineSchedule::gpipe, {3, 1}}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string name = "P" + std::to_string(info.param.P) + "_M" + std::to_string(info.param.M) +
                         (info.param.schedule == PipelineSchedule::gpipe ? "_gpipe" : "_1f1b");
      for (int l : info.param.stage_layers) name += "_" + std::to_string(l);
      return name;
    });

// Both schedules accumulate every stage's microbatch gradients in the same order
// (0, 1, ...), so they train bit for bit alike: only the timing differs.
TEST(Pipeline, SchedulesTrainIdentically) {
  std::vector<float> params[2];
  for (int i = 0; i < 2; ++i) {
    const Scenario s = tiny_pipeline(4, 4, i == 0 ? PipelineSchedule::gpipe : PipelineSchedule::one_f_one_b);
    LayoutTrainer t(s, ComputeTiming::profile);
    for (int k = 0; k < 2; ++k) {
      const TestBatch b = make_batch(s, k);
      t.train_step(k, b.inputs.data(), b.targets.data(), s.training.batch_size, false);
    }
    for (int st = 0; st < 4; ++st) {
      const std::vector<float> p = t.rank(st).model().params_to_host();
      params[i].insert(params[i].end(), p.begin(), p.end());
    }
  }
  EXPECT_EQ(params[0], params[1]);
}

TEST(PipelineSubspace, EqualsTheConstrainedSingleDeviceModel) {
  for (int rank : {8, 32}) {  // k < d, and k = d (U square: the constraint is the identity)
    const Scenario s = with_boundary(tiny_pipeline(2, 2, PipelineSchedule::one_f_one_b), BoundaryMethod::subspace, rank);
    const TestBatch b = make_batch(s, 0);
    const Reference ref = reference(s, b);
    LayoutTrainer t(s, ComputeTiming::profile);
    const StepRecord rec = t.train_step(0, b.inputs.data(), b.targets.data(), s.training.batch_size);
    EXPECT_NEAR(rec.loss, ref.loss, 1e-5 * std::abs(ref.loss)) << "k = " << rank;
    expect_gradients_match(t, ref, 1e-4);
  }
}

TEST(PipelineSubspace, BoundaryIsRebuiltExactly) {
  const Scenario s = with_boundary(tiny_pipeline(2, 1, PipelineSchedule::gpipe), BoundaryMethod::subspace, 4);
  LayoutTrainer t(s, ComputeTiming::profile);
  for (int k = 0; k < 3; ++k) {  // also after optimiser steps: the weights stay in span(U)
    const TestBatch b = make_batch(s, k);
    t.train_step(k, b.inputs.data(), b.targets.data(), s.training.batch_size, false);
    const int64_t n = s.training.batch_size * s.model.seq_len * s.model.d_model;
    EXPECT_LT(rel_diff(t.rank(1).model().input_residual(), t.rank(0).model().output_residual(), n), 1e-6)
        << "step " << k;
  }
}

// A lossy low-rank boundary without the constraint loses what lies outside span(U).
TEST(PipelineLowrank, LosesTheResidualOutsideTheSubspace) {
  const Scenario s = with_boundary(tiny_pipeline(2, 1, PipelineSchedule::gpipe), BoundaryMethod::lowrank, 4);
  LayoutTrainer t(s, ComputeTiming::profile);
  const TestBatch b = make_batch(s, 0);
  t.train_step(0, b.inputs.data(), b.targets.data(), s.training.batch_size, false);
  const int64_t n = s.training.batch_size * s.model.seq_len * s.model.d_model;
  EXPECT_GT(rel_diff(t.rank(1).model().input_residual(), t.rank(0).model().output_residual(), n), 0.5);
}

// dL/dθ for a parameter of the first stage (wq of layer 0, unconstrained) reaches
// it only through the compressed boundary: it must match central differences of
// the pipeline's own (compressed) loss.
TEST(PipelineSubspace, GradientThroughTheBoundaryMatchesFiniteDifferences) {
  Scenario s = with_boundary(tiny_pipeline(2, 2, PipelineSchedule::one_f_one_b), BoundaryMethod::subspace, 8);
  s.training.lr = 0;  // the step leaves the parameters where they are
  s.training.weight_decay = 0;
  const TestBatch b = make_batch(s, 0);
  LayoutTrainer t(s, ComputeTiming::profile);
  t.train_step(0, b.inputs.data(), b.targets.data(), s.training.batch_size, false);
  model::Model& m0 = t.rank(0).model();
  const int64_t wq = m0.layout().find("layers.0.wq").offset;
  const double eps = 1e-2;
  for (int64_t i : {int64_t(0), int64_t(37), int64_t(517)}) {
    const float analytic = m0.grads()[wq + i];
    const float saved = m0.params()[wq + i];
    m0.params()[wq + i] = saved + float(eps);
    const double up = t.evaluate(b.inputs.data(), b.targets.data(), s.training.batch_size);
    m0.params()[wq + i] = saved - float(eps);
    const double down = t.evaluate(b.inputs.data(), b.targets.data(), s.training.batch_size);
    m0.params()[wq + i] = saved;
    const double numeric = (up - down) / (2 * eps);
    EXPECT_NEAR(analytic, numeric, 2e-3 * std::max(1.0, std::abs(numeric)) + 2e-4) << "element " << i;
  }
}

// Each boundary message's modelled bytes: dense B·S·d·b, subspace B·S·(k+1)·b
// forward and B·S·k·b back (per microbatch of B sequences of S tokens).
TEST(PipelineBytes, BoundaryMessagesHaveTheFormulasSizes) {
  for (BoundaryMethod method : {BoundaryMethod::none, BoundaryMethod::subspace}) {
    const int M = 2, k = 8;
    const Scenario s = with_boundary(tiny_pipeline(4, M, PipelineSchedule::one_f_one_b), method,
                                     method == BoundaryMethod::none ? 0 : k);
    LayoutTrainer t(s, ComputeTiming::profile);
    const TestBatch b = make_batch(s, 0);
    const StepRecord rec = t.train_step(0, b.inputs.data(), b.targets.data(), s.training.batch_size);
    const double rows = double(s.training.batch_size / M) * double(s.model.seq_len);
    const double el = s.model.bytes_per_element;
    const double fwd = method == BoundaryMethod::none ? rows * s.model.d_model * el : rows * (k + 1) * el;
    const double bwd = method == BoundaryMethod::none ? rows * s.model.d_model * el : rows * k * el;
    int acts = 0, grads = 0;
    for (const sim::Task& task : rec.graph.tasks()) {
      if (task.kind_tag == "act") {
        EXPECT_DOUBLE_EQ(task.bytes, fwd);
        ++acts;
      }
      if (task.kind_tag == "act_grad") {
        EXPECT_DOUBLE_EQ(task.bytes, bwd);
        ++grads;
      }
    }
    EXPECT_EQ(acts, 3 * M);   // 3 boundaries, each microbatch once
    EXPECT_EQ(grads, 3 * M);
  }
}

TEST(PipelineState, ResumesBitIdentically) {
  const Scenario s = with_boundary(tiny_pipeline(2, 2, PipelineSchedule::one_f_one_b), BoundaryMethod::subspace, 8);
  expect_resumes_bit_identically<LayoutTrainer>(s, 2, 4);
}

}  // namespace
}  // namespace lowband::parallel::test
