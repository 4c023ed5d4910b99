// The compact StepGraph: Task views over its records, shared dependency storage
// and interned tags read back exactly what was added; slots reused by many
// in-flight transfers replay to the closed form.
#include <gtest/gtest.h>

#include <vector>

#include "networks.h"
#include "sim/collectives.h"
#include "sim/replay.h"

namespace lowband::sim {
namespace {

using testing::kTolerance;
using testing::link;

TEST(StepGraph, TaskViewsReadBackWhatWasAdded) {
  StepGraph g(3);
  const TaskId a = g.add_compute(0, 1.5, {}, "attention");
  const std::vector<TaskId> after_a{a};
  const TaskId t = g.add_transfer(0, 2, 1e6, after_a, "kv");
  const TaskId b = g.add_compute(2, 0.25, {a, t}, std::string("attention"));
  ASSERT_EQ(g.tasks().size(), 3u);
  const Task ta = g.task(a), tt = g.task(t), tb = g.task(b);
  EXPECT_EQ(ta.kind, TaskKind::compute);
  EXPECT_EQ(ta.seconds, 1.5);
  EXPECT_EQ(ta.bytes, 0.0);
  EXPECT_EQ(ta.peer, -1);
  EXPECT_TRUE(ta.deps.empty());
  EXPECT_EQ(tt.kind, TaskKind::transfer);
  EXPECT_EQ(tt.rank, 0);
  EXPECT_EQ(tt.peer, 2);
  EXPECT_EQ(tt.bytes, 1e6);
  EXPECT_EQ(tt.seconds, 0.0);
  EXPECT_EQ(tt.kind_tag, "kv");
  EXPECT_EQ(tb.deps, DepSpan(std::vector<TaskId>{a, t}));
  EXPECT_EQ(tb.deps.to_vector(), (std::vector<TaskId>{a, t}));
  EXPECT_EQ(tb.kind_tag, "attention");
  EXPECT_EQ(g.tag_names().size(), 2u);  // "attention" stored once
  TaskId seen = 0;
  for (const Task& task : g.tasks()) EXPECT_EQ(task.rank, g.task(seen++).rank);
  EXPECT_EQ(seen, 3);
}

TEST(StepGraph, DepsOfItsOwnTaskCanBePassedOn) {
  // add_* copies a span that views the graph's own storage before that storage grows.
  StepGraph g(1);
  const TaskId a = g.add_compute(0, 1, {}, "x");
  const TaskId b = g.add_compute(0, 1, {}, "x");
  const TaskId c = g.add_compute(0, 1, {a, b}, "x");
  for (int i = 0; i < 100; ++i) g.add_compute(0, 1, g.task(c).deps, "x");  // many regrowths
  const std::vector<TaskId> ab{a, b};
  for (TaskId id = c; id < static_cast<TaskId>(g.size()); ++id) EXPECT_EQ(g.task(id).deps, DepSpan(ab)) << id;
}

TEST(StepGraph, ManyInFlightTransfersReuseSlotsAndMatchTheClosedForm) {
  // A ring all-gather over 32 ranks, three times in a row: 3 * 32 * 31 transfers,
  // at most 32 in flight. Each round alone on its links: 3 (p-1)(S/(pB) + L).
  const int p = 32;
  const double B = 1e8, L = 1e-3, S = 32e6;
  StepGraph g(p);
  std::vector<int> ranks;
  for (int i = 0; i < p; ++i) ranks.push_back(i);
  RankDeps after;
  for (int round = 0; round < 3; ++round) {
    const std::vector<TaskId> done = ring_all_gather(g, ranks, S, after, "kv");
    after.clear();
    for (TaskId id : done) after.push_back({id});
  }
  const double expected = 3 * ring_all_gather_seconds(p, S, B, L);
  EXPECT_NEAR(replay(testing::full_mesh(p, link(B, L)), g).step_seconds, expected, kTolerance * expected);
}

}  // namespace
}  // namespace lowband::sim
