// The heterogeneous arrangement of public SparseLoCo-with-pipelines code
// (compression.boundary embedding_residual): no weight constraint, so every
// replica holds one model, bit for bit after each outer step; a compressing
// replica's boundary codecs centre on a snapshot of the first stage's
// embedding, sent to the later stages ("embed_snapshot") at the start and
// after each outer step; the snapshot is checkpointed, and resuming mid-round
// continues bit for bit.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "runtime/parallel/layout_trainer.h"
#include "runtime/parallel/pipeline/rank.h"
#include "tests/runtime/test_pipeline_support.h"

namespace lowband::parallel::test {
namespace {

using namespace pipeline_support;  // NOLINT(google-build-using-namespace): the tests' fixtures

constexpr int kRank = 8;  // U's columns (d_model 32)

Scenario mixed() { return mixed_replicas(BoundaryMethod::embedding_residual, kRank, DataSyncMethod::sparseloco); }

std::vector<float> params_of(LayoutTrainer& t, int rank) { return t.rank(rank).model().params_to_host(); }
std::vector<float> tensor(LayoutTrainer& t, int rank, const std::string& name) {
  const std::vector<float> p = params_of(t, rank);
  const model::TensorInfo& info = t.rank(rank).model().layout().find(name);
  return {p.begin() + info.offset, p.begin() + info.offset + info.count()};
}
const std::vector<float>& snapshot(LayoutTrainer& t, int rank) {
  return dynamic_cast<PipelineRank&>(t.rank(rank)).boundary_codec().embedding_table();
}
int count_transfers(const sim::StepGraph& g, const std::string& kind) {
  int n = 0;
  for (const sim::Task& task : g.tasks()) n += task.kind == sim::TaskKind::transfer && task.kind_tag == kind;
  return n;
}

TEST(EmbeddingResidual, ReplicasHoldOneModelAndTheSnapshotFollowsTheOuterStep) {
  const Scenario s = mixed();
  LayoutTrainer t(s, ComputeTiming::profile);
  // One function from the start: nothing folded or projected.
  EXPECT_EQ(tensor(t, 1, "embedding"), tensor(t, 0, "embedding"));
  EXPECT_EQ(tensor(t, 1, "layers.0.wo"), tensor(t, 0, "layers.0.wo"));
  EXPECT_EQ(snapshot(t, 2), tensor(t, 1, "embedding")) << "the later stage's codec holds the initial embedding";
  EXPECT_TRUE(snapshot(t, 4).empty()) << "a dense replica keeps no table";
  const std::vector<float> initial = snapshot(t, 2);
  const double rows = double(s.training.batch_size / 3) * s.model.seq_len, b = s.model.bytes_per_element;
  for (int k = 0; k < 2; ++k) {
    SCOPED_TRACE("step " + std::to_string(k));
    const TestBatch batch = make_batch(s, k);
    const StepRecord rec = t.train_step(k, batch.inputs.data(), batch.targets.data(), s.training.batch_size);
    for (const sim::Task& task : rec.graph.tasks()) {
      if (task.kind != sim::TaskKind::transfer) continue;
      if (task.kind_tag == "act" && task.rank == 1) {
        EXPECT_DOUBLE_EQ(task.bytes, rows * (kRank + 1) * b);
      }
      if (task.kind_tag == "embed_snapshot") {
        EXPECT_EQ(task.rank, 1);
        EXPECT_EQ(task.peer, 2);
        EXPECT_DOUBLE_EQ(task.bytes, double(s.model.vocab) * s.model.d_model * b);
      }
    }
    EXPECT_EQ(count_transfers(rec.graph, "embed_snapshot"), k == 1 ? 1 : 0) << "only after the outer step";
    if (k == 0) {
      EXPECT_NE(tensor(t, 1, "embedding"), tensor(t, 0, "embedding")) << "replicas drift between syncs";
    }
  }
  // After the outer step every holder of a tensor has the same bits (no projection back).
  for (const char* name : {"embedding", "layers.0.wo", "layers.0.w_down", "layers.0.wq"})
    EXPECT_EQ(tensor(t, 1, name), tensor(t, 0, name)) << name;
  EXPECT_EQ(tensor(t, 2, "layers.2.wo"), tensor(t, 0, "layers.2.wo"));
  EXPECT_EQ(snapshot(t, 2), tensor(t, 0, "embedding")) << "the synchronised embedding";
  EXPECT_NE(snapshot(t, 2), initial);
  // The boundary is lossy: the compressing replica is the same model seen through it.
  const TestBatch batch = make_batch(s, 2);
  t.evaluate(batch.inputs.data(), batch.targets.data(), s.training.batch_size);
  const std::vector<double> loss = t.last_eval_per_replica();
  ASSERT_EQ(loss.size(), 3u);
  EXPECT_NEAR(loss[2], loss[0], 1e-5 * loss[0]);
  EXPECT_NE(loss[1], loss[0]);
}

TEST(EmbeddingResidual, ResumesMidRoundBitForBit) {
  const Scenario s = mixed();
  LayoutTrainer a(s, ComputeTiming::profile);
  for (int k = 0; k < 3; ++k) {  // an outer step at step 1; step 2 starts the next round
    const TestBatch batch = make_batch(s, k);
    a.train_step(k, batch.inputs.data(), batch.targets.data(), s.training.batch_size, false);
  }
  std::stringstream state;
  a.save_state(state);
  LayoutTrainer b(s, ComputeTiming::profile);
  EXPECT_NE(snapshot(b, 2), snapshot(a, 2)) << "a fresh trainer holds the initial snapshot";
  b.load_state(state);
  EXPECT_EQ(snapshot(b, 2), snapshot(a, 2));
  for (int k = 3; k < 6; ++k) {  // across the next outer step
    const TestBatch batch = make_batch(s, k);
    const StepRecord ra = a.train_step(k, batch.inputs.data(), batch.targets.data(), s.training.batch_size, true);
    const StepRecord rb = b.train_step(k, batch.inputs.data(), batch.targets.data(), s.training.batch_size, true);
    EXPECT_EQ(ra.loss, rb.loss) << "step " << k;
    EXPECT_EQ(ra.graph.tasks().size(), rb.graph.tasks().size());
  }
  for (int r = 0; r < 5; ++r) EXPECT_EQ(params_of(a, r), params_of(b, r)) << "rank " << r;
  EXPECT_EQ(snapshot(b, 2), snapshot(a, 2));
}

}  // namespace
}  // namespace lowband::parallel::test
