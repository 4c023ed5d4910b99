// Heterogeneous data-parallel replicas (replicas of different pipelines) and
// selective boundary compression, under DiLoCo and SparseLoCo: the outer sync
// works part by part (the common refinement of every replica's stages), so
// every replica ends an outer step with the parts' synchronised weights; a
// replica that compresses its boundaries with the subspace method stays inside
// span(U), so its boundaries still rebuild exactly after the others' updates.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/compress/boundary_codec.h"
#include "runtime/compress/subspace_constraint.h"
#include "runtime/parallel/data/parts.h"
#include "runtime/parallel/layout_trainer.h"
#include "tests/runtime/test_numeric_support.h"
#include "tests/runtime/test_pipeline_support.h"

namespace lowband::parallel::test {
namespace {

using lowband::test_support::rel_diff;
using namespace pipeline_support;  // NOLINT(google-build-using-namespace): the tests' fixtures

// Replicas of the given (pipeline, context, compress) shapes on nodes 0, 1, ...
// in rank order, 2 sequences each, local steps of `method` every H steps
// (outer lr 1; DiLoCo without momentum).
Scenario hetero(std::vector<ReplicaConfig> replicas, DataSyncMethod method, int H) {
  Scenario s = tiny_pipeline(1, 1, PipelineSchedule::one_f_one_b);
  s.training.grad_clip = 1.0;
  int node = 0;
  for (ReplicaConfig& r : replicas)
    for (int i = 0; i < r.pipeline * r.context; ++i) r.nodes.push_back(node), s.parallel.placement.push_back(node++);
  s.network.nodes = std::max(s.network.nodes, node);
  s.parallel.pipeline = replicas[0].pipeline, s.parallel.context = replicas[0].context;
  s.parallel.data = int(replicas.size());
  s.parallel.replicas = std::move(replicas);
  s.training.batch_size = 2 * s.parallel.data;
  s.parallel.data_sync.method = method;
  s.parallel.data_sync.inner_steps = H;
  s.parallel.data_sync.outer_lr = 1.0;
  s.parallel.data_sync.outer_momentum = 0;
  s.parallel.data_sync.topk_per_chunk = 16;
  return s;
}

ReplicaConfig shape(int P, int C = 1, bool compress = false) { return ReplicaConfig{P, C, {}, compress}; }

std::vector<float> params_of(LayoutTrainer& t, int rank) { return t.rank(rank).model().params_to_host(); }

StepRecord step(LayoutTrainer& t, const Scenario& s, int k, bool record = false) {
  const TestBatch b = make_batch(s, k);
  return t.train_step(k, b.inputs.data(), b.targets.data(), s.training.batch_size, record);
}

TEST(DataParts, CommonRefinementOfTheStages) {
  auto ranges = [](const std::vector<ModelPart>& parts) {
    std::vector<int> out;
    for (const ModelPart& p : parts) out.push_back(p.first_layer), out.push_back(p.end_layer);
    return out;
  };
  const std::vector<ModelPart> four = common_parts({{0, 2}, {0, 1, 2, 3}}, 4);
  EXPECT_EQ(ranges(four), (std::vector<int>{0, 1, 1, 2, 2, 3, 3, 4}));
  EXPECT_TRUE(four[0].embedding && !four[0].head);
  EXPECT_TRUE(!four[3].embedding && four[3].head);
  EXPECT_TRUE(!four[1].embedding && !four[1].head);
  EXPECT_EQ(ranges(common_parts({{0}, {0, 2}}, 4)), (std::vector<int>{0, 2, 2, 4}));
  const std::vector<ModelPart> whole = common_parts({{0}, {0}}, 4);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_TRUE(whole[0].embedding && whole[0].head);
  EXPECT_EQ(ranges(common_parts({{0, 3}, {0, 2}}, 5)), (std::vector<int>{0, 2, 2, 3, 3, 5}));
  EXPECT_THROW(common_parts({{1, 2}}, 4), std::invalid_argument);
  EXPECT_THROW(common_parts({{0, 2, 2}}, 4), std::invalid_argument);
  EXPECT_THROW(common_parts({{0, 4}}, 4), std::invalid_argument);
}

// The fact the part-by-part sync rests on: a part is a contiguous run of every
// holder's flat buffer, tensor for tensor the part's own layout, and holds the
// same initial values as the whole model's tensors of the same name.
TEST(DataParts, APartIsAContiguousRunOfEveryHoldersBuffer) {
  const ModelConfig c = tiny_pipeline(1, 1, PipelineSchedule::gpipe).model;
  const model::ParamLayout whole(c);
  std::vector<float> whole_params(size_t(whole.count()));
  model::init_parameters(whole, 7, whole_params.data());
  for (const ModelPart& part : common_parts({{0, 2}, {0, 1, 2, 3}, {0, 3}}, c.layers)) {
    const model::ParamLayout mine(c, part.span());
    for (const model::StageSpan span : {model::StageSpan{}, model::StageSpan{0, 2, true, false},
                                        model::StageSpan{2, 2, false, true}, model::StageSpan{1, 2, false, false}}) {
      const model::ParamLayout stage(c, span);
      if (part.first_layer < stage.first_layer() || part.end_layer > stage.end_layer()) {
        if (part.end_layer > stage.first_layer() && part.first_layer < stage.end_layer())
          ADD_FAILURE() << "parts never straddle a stage";
        continue;
      }
      std::vector<float> stage_params(size_t(stage.count()));
      model::init_parameters(stage, 7, stage_params.data());
      const int64_t at = part_offset(stage, part), whole_at = part_offset(whole, part);
      ASSERT_LE(at + mine.count(), stage.count());
      for (const model::TensorInfo& t : mine.tensors()) {
        EXPECT_EQ(stage.find(t.name).offset, at + t.offset) << t.name;
        EXPECT_EQ(whole.find(t.name).offset, whole_at + t.offset) << t.name;
      }
      EXPECT_TRUE(std::equal(stage_params.begin() + at, stage_params.begin() + at + mine.count(),
                             whole_params.begin() + whole_at))
          << "layers [" << part.first_layer << ", " << part.end_layer << ")";
    }
  }
  EXPECT_THROW(part_offset(model::ParamLayout(c, {2, 2, false, true}), common_parts({{0, 1}}, 4)[0]),
               std::invalid_argument);
}

// DiLoCo with H = 1, outer lr 1, no momentum on a 1-rank replica beside a
// 2-stage replica: after every step each replica holds the average of the two
// replicas' parameters after their own AdamW steps (the 2 stages' buffers,
// concatenated, are the whole model's buffer). Reference: one-replica trainers
// of each shape, stepped alone and averaged by hand.
TEST(HeteroReplicas, DilocoWithOneInnerStepAveragesEveryPart) {
  const Scenario s = hetero({shape(1), shape(2)}, DataSyncMethod::diloco, 1);
  LayoutTrainer t(s, ComputeTiming::profile);
  ASSERT_EQ(t.ranks(), 3);
  ASSERT_EQ(t.parts().size(), 2u);
  LayoutTrainer whole(t.replica_scenario(0), ComputeTiming::profile);
  LayoutTrainer staged(t.replica_scenario(1), ComputeTiming::profile);
  const int per = s.training.batch_size / 2;
  const int64_t rows = int64_t(per) * s.model.seq_len;
  for (int k = 0; k < 3; ++k) {
    const TestBatch b = make_batch(s, k);
    t.train_step(k, b.inputs.data(), b.targets.data(), s.training.batch_size, false);
    whole.train_step(k, b.inputs.data(), b.targets.data(), per, false);
    staged.train_step(k, b.inputs.data() + rows, b.targets.data() + rows, per, false);
    const std::vector<float> a = params_of(whole, 0), s0 = params_of(staged, 0), s1 = params_of(staged, 1);
    ASSERT_EQ(a.size(), s0.size() + s1.size());
    std::vector<float> avg(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      const float other = i < s0.size() ? s0[i] : s1[i - s0.size()];
      avg[i] = float((double(a[i]) + double(other)) / 2);
    }
    std::copy(avg.begin(), avg.end(), whole.rank(0).model().params());
    std::copy(avg.begin(), avg.begin() + int64_t(s0.size()), staged.rank(0).model().params());
    std::copy(avg.begin() + int64_t(s0.size()), avg.end(), staged.rank(1).model().params());
    const std::vector<float> got0 = params_of(t, 0), got1 = params_of(t, 1), got2 = params_of(t, 2);
    EXPECT_LT(rel_diff(got0.data(), avg.data(), int64_t(avg.size())), 1e-6) << "step " << k;
    EXPECT_LT(rel_diff(got1.data(), avg.data(), int64_t(got1.size())), 1e-6) << "step " << k;
    EXPECT_LT(rel_diff(got2.data(), avg.data() + got1.size(), int64_t(got2.size())), 1e-6) << "step " << k;
  }
}

// Which ranks hold part p, and the part's slice of a rank's parameters.
struct Holder {
  int rank;
  int64_t offset;
};
std::vector<Holder> holders(LayoutTrainer& t, const ModelPart& part) {
  std::vector<Holder> out;
  for (int r = 0; r < t.ranks(); ++r) {
    const model::ParamLayout& L = t.rank(r).model().layout();
    if (part.first_layer >= L.first_layer() && part.end_layer <= L.end_layer()) out.push_back({r, part_offset(L, part)});
  }
  return out;
}

// SparseLoCo on replicas of 1, 2 and 4 stages: between outer steps they drift
// apart, after each every holder of a part holds it bit for bit; the
// pseudo-gradients travel only between holders of the same part.
TEST(HeteroReplicas, SparselocoHoldersOfAPartMeetBitIdentically) {
  const Scenario s = hetero({shape(1), shape(2), shape(4)}, DataSyncMethod::sparseloco, 2);
  LayoutTrainer t(s, ComputeTiming::profile);
  ASSERT_EQ(t.parts().size(), 4u);
  for (int k = 0; k < 4; ++k) {
    const StepRecord rec = step(t, s, k, /*record=*/true);
    EXPECT_TRUE(std::isfinite(rec.loss));
    for (const ModelPart& part : t.parts()) {
      const std::vector<Holder> hs = holders(t, part);
      ASSERT_EQ(hs.size(), 3u) << "one holder per replica";
      const int64_t n = model::ParamLayout(s.model, part.span()).count();
      const std::vector<float> first = params_of(t, hs[0].rank);
      for (size_t h = 1; h < hs.size(); ++h) {
        const std::vector<float> other = params_of(t, hs[h].rank);
        const bool same = std::equal(first.begin() + hs[0].offset, first.begin() + hs[0].offset + n,
                                     other.begin() + hs[h].offset);
        EXPECT_EQ(same, k % 2 == 1) << "step " << k << " layers [" << part.first_layer << ", " << part.end_layer
                                    << ") ranks " << hs[0].rank << ", " << hs[h].rank;
      }
    }
    int pseudo = 0;
    for (const sim::Task& task : rec.graph.tasks()) {
      if (task.kind != sim::TaskKind::transfer || task.kind_tag != "pseudo_grad") continue;
      ++pseudo;
      bool share = false;
      for (const ModelPart& part : t.parts()) {
        const std::vector<Holder> hs = holders(t, part);
        auto holds = [&](int r) { return std::any_of(hs.begin(), hs.end(), [&](const Holder& h) { return h.rank == r; }); };
        share = share || (holds(task.rank) && holds(task.peer));
      }
      EXPECT_TRUE(share) << task.rank << " -> " << task.peer;
    }
    EXPECT_EQ(pseudo > 0, k % 2 == 1) << "step " << k;
  }
}

// Context ranks inside replicas of different pipelines: context rank c syncs
// with context rank c of the others, and every copy of a part meets.
TEST(HeteroReplicas, ContextRanksSyncWithTheirPeers) {
  const Scenario s = hetero({shape(1, 2), shape(2, 2)}, DataSyncMethod::sparseloco, 1);
  LayoutTrainer t(s, ComputeTiming::profile);
  step(t, s, 0);
  for (const ModelPart& part : t.parts()) {
    const std::vector<Holder> hs = holders(t, part);
    ASSERT_EQ(hs.size(), 4u) << "2 context ranks x 2 replicas";
    const int64_t n = model::ParamLayout(s.model, part.span()).count();
    const std::vector<float> first = params_of(t, hs[0].rank);
    for (size_t h = 1; h < hs.size(); ++h) {
      const std::vector<float> other = params_of(t, hs[h].rank);
      EXPECT_TRUE(std::equal(first.begin() + hs[0].offset, first.begin() + hs[0].offset + n,
                             other.begin() + hs[h].offset))
          << "rank " << hs[h].rank;
    }
  }
}

TEST(HeteroReplicas, ResumesBitIdenticallyBetweenOuterSteps) {
  Scenario s = hetero({shape(1), shape(2, 1, true)}, DataSyncMethod::sparseloco, 2);
  s = with_boundary(s, BoundaryMethod::subspace, 8);
  expect_resumes_bit_identically<LayoutTrainer>(s, 3, 5);
}

}  // namespace
}  // namespace lowband::parallel::test
