// The estimate's pipeline graph (built from shapes) against the graph a real
// in-process pipeline step records (LayoutTrainer, compute seconds from the
// device profile): the same tasks, task for task — ranks, peers, bytes, seconds,
// kinds and dependencies — for both schedules, 2 and 4 stages, 1 and 4
// microbatches, dense and subspace boundaries.
#include <gtest/gtest.h>

#include "runtime/parallel/layout_trainer.h"
#include "runtime/parallel/dry_steps.h"
#include "runtime/parallel/pipeline/costs.h"
#include "runtime/scenario/load.h"
#include "tests/runtime/test_graph_support.h"

namespace lowband {
namespace {

// The graph a real step records on a fixed batch (every target valid).
sim::StepGraph recorded_step(parallel::LayoutTrainer& trainer, const Scenario& s) {
  const int64_t n = s.training.batch_size * s.model.seq_len;
  std::vector<int32_t> inputs, targets;
  for (int64_t i = 0; i < n; ++i) {
    inputs.push_back(int32_t(i * 7 % s.model.vocab));
    targets.push_back(int32_t(i % s.model.vocab));
  }
  return trainer.train_step(0, inputs.data(), targets.data(), s.training.batch_size).graph;
}


Scenario tiny_pipeline(int P, int M, PipelineSchedule schedule, BoundaryMethod boundary) {
  Scenario s = builtin_scenario("default", {"model.layers=4", "model.d_model=32", "model.heads=4", "model.kv_heads=2",
                                            "model.ffn_hidden=64", "model.seq_len=32", "model.tie_embeddings=false",
                                            "network.nodes=8", "training.batch_size=4", "parallel.context=1"});
  s.parallel.pipeline = P;
  s.parallel.microbatches = M;
  s.parallel.schedule = schedule;
  s.compression.boundary.method = boundary;
  s.compression.boundary.rank = boundary == BoundaryMethod::none ? 0 : 8;
  return s;
}

TEST(PipelineRecorded, EstimateGraphIsTheRecordedGraph) {
  for (PipelineSchedule schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
    for (BoundaryMethod boundary : {BoundaryMethod::none, BoundaryMethod::subspace})
      for (int P : {2, 4})
        for (int M : {1, 4}) {
          SCOPED_TRACE("P=" + std::to_string(P) + " M=" + std::to_string(M) +
                       (schedule == PipelineSchedule::gpipe ? " gpipe" : " 1f1b") +
                       (boundary == BoundaryMethod::none ? " dense" : " subspace"));
          const Scenario s = tiny_pipeline(P, M, schedule, boundary);
          parallel::LayoutTrainer trainer(s, parallel::ComputeTiming::profile);
          const sim::StepGraph recorded = recorded_step(trainer, s);
          const sim::StepGraph built = parallel::steady_step_graph(s);
          ASSERT_EQ(built.tasks().size(), recorded.tasks().size());
          for (size_t i = 0; i < built.tasks().size(); ++i) {
            const sim::Task &a = built.tasks()[i], &b = recorded.tasks()[i];
            EXPECT_EQ(a.kind, b.kind) << i;
            EXPECT_EQ(a.rank, b.rank) << i;
            EXPECT_EQ(a.peer, b.peer) << i;
            EXPECT_EQ(a.bytes, b.bytes) << i;
            EXPECT_EQ(a.seconds, b.seconds) << i;
            EXPECT_EQ(a.kind_tag, b.kind_tag) << i;
            EXPECT_EQ(a.deps, b.deps) << i;
          }
        }
}

// Stages of C context ranks: the estimate's graph (the same PipelineRank run dry)
// against a recorded LayoutTrainer step, task for task, with the K/V exchange,
// the stage's gradient buckets and (MoS) the codec's collectives.
TEST(PipelineRecorded, ContextRanksEstimateGraphIsTheRecordedGraph) {
  struct Case {
    int P, C, M;
    PipelineSchedule schedule;
    std::vector<std::string> sets;
  };
  const std::vector<Case> cases = {
      {2, 2, 2, PipelineSchedule::one_f_one_b, {"parallel.split=zigzag", "parallel.exchange=ring"}},
      {2, 2, 4, PipelineSchedule::gpipe, {"parallel.split=contiguous", "parallel.exchange=all_gather"}},
      {2, 4, 2, PipelineSchedule::one_f_one_b, {"parallel.overlap=false"}},
      {4, 2, 4, PipelineSchedule::one_f_one_b, {}},
      {2, 2, 2, PipelineSchedule::one_f_one_b,
       {"compression.method=mos", "compression.k_rank=2", "compression.v_rank=4", "compression.warmup_steps=0",
        "compression.boundary.method=subspace", "compression.boundary.rank=8"}}};
  for (const Case& c : cases) {
    std::vector<std::string> sets = {"model.layers=4", "model.d_model=32", "model.heads=4", "model.kv_heads=2",
                                     "model.ffn_hidden=64", "model.seq_len=32", "model.tie_embeddings=false",
                                     "network.nodes=8", "training.batch_size=4",
                                     "parallel.context=" + std::to_string(c.C),
                                     "parallel.pipeline=" + std::to_string(c.P),
                                     "parallel.microbatches=" + std::to_string(c.M)};
    sets.insert(sets.end(), c.sets.begin(), c.sets.end());
    Scenario s = builtin_scenario("default", sets);
    s.parallel.schedule = c.schedule;
    SCOPED_TRACE(std::to_string(c.P) + "x" + std::to_string(c.C) + " M=" + std::to_string(c.M) +
                 (c.sets.empty() ? "" : " " + c.sets.front()));
    parallel::LayoutTrainer trainer(s, parallel::ComputeTiming::profile);
    const sim::StepGraph recorded = recorded_step(trainer, s);
    test_support::expect_same_tasks(parallel::steady_step_graph(s), recorded);
  }
}

}  // namespace
}  // namespace lowband
