// Pipeline stages with context parallelism inside (P stages x C context ranks,
// every rank its own thread) must be an exact re-arrangement of the
// single-device computation: 2 x 2 and 2 x 4, ring and all-gather exchange,
// zigzag and contiguous splits, GPipe and 1F1B give the single-device model's
// loss and every rank's gradients (summed over its context group) to fp32
// rounding. The recorded graph carries boundary messages only between the same
// context rank of neighbouring stages and K/V only inside a stage; compressed
// layouts (MoS K/V and subspace boundaries) keep every rank's codec identical
// and resume bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/compress/boundary_codec.h"
#include "runtime/parallel/layout_trainer.h"
#include "tests/runtime/test_numeric_support.h"
#include "tests/runtime/test_pipeline_support.h"

namespace lowband::parallel::test {
namespace {

using lowband::test_support::rel_diff;
using namespace pipeline_support;  // NOLINT(google-build-using-namespace): the tests' fixtures

Scenario tiny_pipeline_context(int P, int C, int M, PipelineSchedule schedule) {
  Scenario s = tiny_pipeline(P, M, schedule);
  s.parallel.context = C;
  return s;
}

struct Case {
  int P, C, M;
  PipelineSchedule schedule;
  CpExchange exchange;
  CpSplit split;
};

class PipelineContextEqualsSingleDevice : public ::testing::TestWithParam<Case> {};

TEST_P(PipelineContextEqualsSingleDevice, LossAndGradients) {
  const Case& c = GetParam();
  Scenario s = tiny_pipeline_context(c.P, c.C, c.M, c.schedule);
  s.parallel.exchange = c.exchange;
  s.parallel.split = c.split;
  const TestBatch b = make_batch(s, 0);
  const Reference ref = reference(s, b);
  LayoutTrainer t(s, ComputeTiming::profile);
  ASSERT_EQ(t.ranks(), c.P * c.C);
  const StepRecord rec = t.train_step(0, b.inputs.data(), b.targets.data(), s.training.batch_size);
  EXPECT_NEAR(rec.loss, ref.loss, 1e-5 * std::abs(ref.loss));
  expect_gradients_match(t, ref, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, PipelineContextEqualsSingleDevice,
    ::testing::Values(Case{2, 2, 2, PipelineSchedule::one_f_one_b, CpExchange::ring, CpSplit::zigzag},
                      Case{2, 2, 1, PipelineSchedule::gpipe, CpExchange::all_gather, CpSplit::contiguous},
                      Case{2, 4, 2, PipelineSchedule::gpipe, CpExchange::ring, CpSplit::zigzag},
                      Case{2, 4, 4, PipelineSchedule::one_f_one_b, CpExchange::all_gather, CpSplit::zigzag},
                      Case{4, 2, 2, PipelineSchedule::one_f_one_b, CpExchange::ring, CpSplit::contiguous}),
    [](const ::testing::TestParamInfo<Case>& info) {
      const Case& c = info.param;
      return "P" + std::to_string(c.P) + "xC" + std::to_string(c.C) + "_M" + std::to_string(c.M) +
             (c.schedule == PipelineSchedule::gpipe ? "_gpipe" : "_1f1b") +
             (c.exchange == CpExchange::ring ? "_ring" : "_allgather") +
             (c.split == CpSplit::zigzag ? "_zigzag" : "_contiguous");
    });

// Three steps of 2 x 2 on one batch train like the pipeline alone (2 x 1): the
// same computation, only the sums' order differs; evaluation agrees too.
TEST(PipelineContext, TrainsLikeThePipelineAlone) {
  std::vector<double> losses[2];
  double evaluated[2];
  for (int i = 0; i < 2; ++i) {
    const Scenario s = tiny_pipeline_context(2, i == 0 ? 1 : 2, 2, PipelineSchedule::one_f_one_b);
    LayoutTrainer t(s, ComputeTiming::profile);
    const TestBatch b = make_batch(s, 0);
    for (int k = 0; k < 3; ++k)
      losses[i].push_back(t.train_step(k, b.inputs.data(), b.targets.data(), s.training.batch_size, false).loss);
    const TestBatch held_out = make_batch(s, 9);
    evaluated[i] = t.evaluate(held_out.inputs.data(), held_out.targets.data(), s.training.batch_size);
  }
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(losses[1][k], losses[0][k], 1e-5 * std::abs(losses[0][k])) << "step " << k;
  EXPECT_LT(losses[1][2], losses[1][0]);  // it learns the batch
  EXPECT_NEAR(evaluated[1], evaluated[0], 1e-5 * std::abs(evaluated[0]));
}

// The recorded step: "act"/"act_grad" only from (s, c) to (s ± 1, c), "kv"/"dkv"
// only inside a stage, each boundary message of its rows' size; "grad_sync"
// inside each stage's context group, one "loss" over all ranks.
TEST(PipelineContext, RecordedGraphKeepsEachExchangeInItsGroup) {
  const int P = 2, C = 2, M = 2;
  Scenario s = tiny_pipeline_context(P, C, M, PipelineSchedule::one_f_one_b);
  s = with_boundary(s, BoundaryMethod::subspace, 8);
  LayoutTrainer t(s, ComputeTiming::profile);
  const TestBatch b = make_batch(s, 0);
  const StepRecord rec = t.train_step(0, b.inputs.data(), b.targets.data(), s.training.batch_size);
  const double rows = double(s.training.batch_size / M) * double(s.model.seq_len / C);
  const double el = s.model.bytes_per_element;
  int acts = 0, grads = 0, kvs = 0, dkvs = 0;
  std::set<std::string> kinds;
  for (const sim::Task& task : rec.graph.tasks()) {
    kinds.insert(task.kind_tag);
    if (task.kind != sim::TaskKind::transfer) continue;
    const int from = task.rank, to = task.peer;
    if (task.kind_tag == "act") {
      EXPECT_EQ(to, from + C) << "act " << from << " -> " << to;
      EXPECT_DOUBLE_EQ(task.bytes, rows * (8 + 1) * el);
      ++acts;
    } else if (task.kind_tag == "act_grad") {
      EXPECT_EQ(to, from - C);
      EXPECT_DOUBLE_EQ(task.bytes, rows * 8 * el);
      ++grads;
    } else if (task.kind_tag == "kv" || task.kind_tag == "dkv") {
      EXPECT_EQ(from / C, to / C) << task.kind_tag << " across stages";
      ++(task.kind_tag == "kv" ? kvs : dkvs);
    }
  }
  EXPECT_EQ(acts, C * M);  // one boundary, each context rank's rows of each microbatch
  EXPECT_EQ(grads, C * M);
  // Ring of 2: one K/V message per rank, layer and microbatch; the same back.
  const int layers = s.model.layers;
  EXPECT_EQ(kvs, P * C * (layers / P) * M);
  EXPECT_EQ(dkvs, kvs);
  for (const char* k : {"stage_in", "stage_out", "qkv", "attention", "mlp", "grad_sync", "loss", "optimizer"})
    EXPECT_TRUE(kinds.count(k)) << k;
}

// MoS K/V and subspace boundaries together: the codec's collectives go over all
// ranks, so every rank's codec (its parameters) stays the same; the run resumes
// bit for bit from a checkpoint taken after the warm-up.
TEST(PipelineContext, CompressedTrainsAndResumesBitIdentically) {
  Scenario s = with_boundary(tiny_pipeline_context(2, 2, 2, PipelineSchedule::one_f_one_b), BoundaryMethod::subspace, 8);
  s.compression.method = CompressionMethod::mos;
  s.compression.k_rank_set = 2, s.compression.v_rank_set = 4;
  s.compression.warmup_steps = 1;
  LayoutTrainer straight(s, ComputeTiming::profile);
  for (double l : step_losses(straight, s, 0, 4)) EXPECT_TRUE(std::isfinite(l));
  ASSERT_NE(straight.rank(0).context(), nullptr);
  compress::KvCodec& codec0 = straight.rank(0).context()->codec();
  ASSERT_GT(codec0.param_count(), 0);
  for (int r = 1; r < straight.ranks(); ++r) {
    compress::KvCodec& codec = straight.rank(r).context()->codec();
    ASSERT_EQ(codec.param_count(), codec0.param_count());
    EXPECT_EQ(std::vector<float>(codec.params(), codec.params() + codec.param_count()),
              std::vector<float>(codec0.params(), codec0.params() + codec0.param_count()))
        << "rank " << r;
  }
  expect_resumes_bit_identically<LayoutTrainer>(s, 2, 4);
}

}  // namespace
}  // namespace lowband::parallel::test
