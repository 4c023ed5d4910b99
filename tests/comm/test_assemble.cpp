// assemble_step_graph with groups of one split: their collectives share the
// split's communicator number, so they must be told apart by their members even
// when the replay reaches one group's collective while the other group's is
// half reached (a data-parallel step: each replica's pipeline and its "loss"
// all-reduce, one rank held back by a message from the other replica).
#include <gtest/gtest.h>

#include <vector>

#include "comm/recording.h"

namespace lowband::comm {
namespace {

Event all_reduce(std::vector<int> members, double bytes, int comm_id = 1) {
  Event e;
  e.type = EventType::all_reduce;
  e.kind = "loss";
  e.bytes = bytes;
  e.comm_id = comm_id;  // by default both groups come from one split
  e.members = std::move(members);
  return e;
}

Event point(EventType type, int peer) {
  Event e;
  e.type = type;
  e.kind = "act";
  e.bytes = 100;
  e.peer = peer;
  return e;
}

TEST(AssembleStepGraph, GroupsOfOneSplitKeepTheirOwnCollectives) {
  std::vector<RankLog> logs(4);
  logs[0].add(all_reduce({0, 1}, 16));
  logs[1].add(point(EventType::recv, 3));  // rank 1 waits for rank 3 first
  logs[1].add(all_reduce({0, 1}, 16));
  logs[2].add(all_reduce({2, 3}, 16));
  logs[3].add(all_reduce({2, 3}, 16));
  logs[3].add(point(EventType::send, 1));
  const sim::StepGraph g = assemble_step_graph({&logs[0], &logs[1], &logs[2], &logs[3]});
  // Each group's ring all-reduce of 2 ranks: 2·(2−1) steps of one transfer each way.
  int within[2] = {0, 0}, act = 0;
  for (const sim::Task& t : g.tasks()) {
    if (t.kind != sim::TaskKind::transfer) continue;
    if (t.kind_tag == "act") {
      EXPECT_EQ(t.rank, 3);
      EXPECT_EQ(t.peer, 1);
      ++act;
      continue;
    }
    ASSERT_EQ(t.rank / 2, t.peer / 2) << "a collective across the groups: " << t.rank << " -> " << t.peer;
    ++within[t.rank / 2];
  }
  EXPECT_EQ(act, 1);
  EXPECT_EQ(within[0], 4);
  EXPECT_EQ(within[1], 4);
}

// One group numbered differently on its members: rank 0 made two more splits
// before (a pipeline replica's per-step groups) than rank 1 (a context replica).
// Their collectives still meet, in order, by the group's members.
TEST(AssembleStepGraph, AnAllReduceMovesItsBytesAsTheAlgorithmSays) {
  // 4 ranks, 4000 bytes each: ring — 2·3 rounds of one 1000-byte transfer per rank
  // to its successor; direct — 2 all-to-alls, 1000 bytes to each other rank each
  // time. Both send 6000 bytes per rank.
  std::vector<RankLog> logs(4);
  for (auto& log : logs) log.add(all_reduce({0, 1, 2, 3}, 4000, 0));
  const std::vector<const RankLog*> views = {&logs[0], &logs[1], &logs[2], &logs[3]};
  for (const sim::AllReduceAlgorithm a : {sim::AllReduceAlgorithm::ring, sim::AllReduceAlgorithm::direct}) {
    const sim::StepGraph g = assemble_step_graph(views, a);
    std::vector<std::vector<int>> to(4, std::vector<int>(4, 0));
    for (const sim::Task& t : g.tasks())
      if (t.kind == sim::TaskKind::transfer) {
        EXPECT_EQ(t.bytes, 1000);
        ++to[size_t(t.rank)][size_t(t.peer)];
      }
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(g.bytes_sent(r, ""), 6000) << to_string(a);
      for (int q = 0; q < 4; ++q) {
        const int expected = a == sim::AllReduceAlgorithm::ring ? (q == (r + 1) % 4 ? 6 : 0) : (q == r ? 0 : 2);
        EXPECT_EQ(to[size_t(r)][size_t(q)], expected) << to_string(a) << " " << r << " -> " << q;
      }
    }
  }
}

TEST(AssembleStepGraph, OneGroupNumberedDifferentlyOnItsMembersStillMeets) {
  std::vector<RankLog> logs(2);
  logs[0].add(all_reduce({0, 1}, 16, 3));
  logs[0].add(all_reduce({0, 1}, 32, 4));
  logs[1].add(all_reduce({0, 1}, 16, 1));
  logs[1].add(all_reduce({0, 1}, 32, 2));
  const sim::StepGraph g = assemble_step_graph({&logs[0], &logs[1]});
  double bytes = 0;
  int transfers = 0;
  for (const sim::Task& t : g.tasks())
    if (t.kind == sim::TaskKind::transfer) bytes += t.bytes, ++transfers;
  // Two ring all-reduces of 2 ranks: 2 steps each way of S/2, S = 16 then 32.
  EXPECT_EQ(transfers, 8);
  EXPECT_DOUBLE_EQ(bytes, 2 * 2 * (16 / 2) + 2 * 2 * (32 / 2));
}

}  // namespace
}  // namespace lowband::comm
