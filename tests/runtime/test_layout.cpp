// The layout: ranks' places and groups, parallel.placement and parallel.replicas
// (validated with the JSON path), and a trained step's graph on the placed nodes.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "runtime/parallel/dry_steps.h"
#include "runtime/parallel/layout.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/load.h"
#include "tests/runtime/test_graph_support.h"

namespace lowband::parallel::test {
namespace {

Scenario small(std::vector<std::string> extra) {
  std::vector<std::string> sets = {"model.layers=1", "model.d_model=32", "model.heads=4", "model.kv_heads=2",
                                   "model.ffn_hidden=64", "model.seq_len=32", "network.nodes=6",
                                   "training.batch_size=1"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return builtin_scenario("default", sets);
}

TEST(Layout, ContextRanksAreOneGroupOnTheirOwnNodes) {
  const Layout l(small({"parallel.context=4"}).parallel);
  ASSERT_EQ(l.ranks(), 4);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(l.place(r).context_rank, r);
    EXPECT_EQ(l.place(r).stage, 0);
    EXPECT_EQ(l.place(r).replica, 0);
    EXPECT_EQ(l.node_of(r), r);
    EXPECT_EQ(l.context_group(r), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(l.pipeline_group(r), std::vector<int>{r});
    EXPECT_EQ(l.data_group(r), std::vector<int>{r});
  }
}

TEST(Layout, GroupsOfAReplicaByStageAndContextRank) {
  // Not trainable yet (pipeline and data parallelism come next), but the layout
  // already places and groups them: 2 replicas x 2 stages x 3 context ranks.
  ParallelConfig p;
  p.data = 2, p.pipeline = 2, p.context = 3;
  const Layout l(p);
  ASSERT_EQ(l.ranks(), 12);
  EXPECT_EQ(l.rank_at(1, 1, 2), 11);
  EXPECT_EQ(l.context_group(4), (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(l.pipeline_group(4), (std::vector<int>{1, 4}));
  EXPECT_EQ(l.data_group(4), (std::vector<int>{4, 10}));
}

TEST(Layout, PlacementAndReplicasAreValidatedWithTheirPath) {
  struct Bad {
    std::vector<std::string> sets;
    std::string place;
  };
  const std::vector<Bad> bad = {
      {{"parallel.context=4", "parallel.placement=[0,1,2]"}, "parallel.placement"},
      {{"parallel.context=2", "parallel.placement=[0,7]"}, "parallel.placement"},
      {{"parallel.context=2", "parallel.placement=[3,3]"}, "parallel.placement"},
      {{"parallel.context=2", "parallel.placement=[0,\"x\"]"}, "parallel.placement.1"},
      {{"parallel.replicas=[{\"context\":2,\"nodes\":[0]}]"}, "parallel.replicas.0.nodes"},
      // A replica's stages are checked like parallel.pipeline's: here 2 stages for 1 layer.
      {{"parallel.context=1", "parallel.replicas=[{\"pipeline\":2,\"nodes\":[0,1]}]"}, "parallel.pipeline"},
      {{"parallel.context=4", "parallel.replicas=[{\"context\":2,\"nodes\":[0,1]}]"}, "parallel.replicas"},
  };
  for (const Bad& b : bad) {
    try {
      small(b.sets);
      ADD_FAILURE() << "accepted: " << b.sets.back();
    } catch (const InputError& e) {
      // One line naming the flag, then the JSON path the error is at.
      EXPECT_NE(std::string(e.what()).find(": " + b.place + ": "), std::string::npos) << e.what();
    }
  }
  const Scenario ok = small({"parallel.context=2", "parallel.replicas=[{\"context\":2,\"nodes\":[5,2]}]"});
  EXPECT_EQ(ok.parallel.context, 2);
  EXPECT_EQ(ok.parallel.placement, (std::vector<int>{5, 2}));
  EXPECT_EQ(ok.parallel.node_of(0), 5);
  const Scenario staged = small({"model.layers=2", "parallel.context=1",
                                 "parallel.replicas=[{\"pipeline\":2,\"nodes\":[3,1]}]"});
  EXPECT_EQ(staged.parallel.pipeline, 2);
  EXPECT_EQ(staged.parallel.placement, (std::vector<int>{3, 1}));
}

using test_support::transfers;

TEST(Layout, ATrainedStepRunsOnThePlacedNodes) {
  const Scenario placed =
      small({"parallel.context=3", "parallel.placement=[4,0,2]", "parallel.split=contiguous", "model.seq_len=48"});
  LayoutTrainer cp(placed, ComputeTiming::profile);
  std::vector<int32_t> tokens(size_t(placed.model.seq_len));
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t(i * 7 % 256);
  const StepRecord rec = cp.train_step(0, tokens.data(), tokens.data(), 1);
  const sim::StepGraph estimated = steady_step_graph(placed);
  EXPECT_EQ(transfers(rec.graph), transfers(estimated));
  // Rank 0's ring send to rank 1 leaves node 4 for node 0; nodes 1 and 3 hold no rank.
  bool found = false;
  for (const auto& t : rec.graph.tasks()) {
    EXPECT_NE(t.rank, 1);
    EXPECT_NE(t.rank, 3);
    found |= t.kind == sim::TaskKind::transfer && t.kind_tag == "kv" && t.rank == 4 && t.peer == 0;
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace lowband::parallel::test

