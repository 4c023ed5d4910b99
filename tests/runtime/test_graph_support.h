#pragma once
// The transfers of a step graph as a sorted multiset of (source, destination,
// bytes, kind), for comparing two graphs transfer for transfer; and two graphs
// compared task for task.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/scenario/load.h"
#include "sim/step_graph.h"

namespace lowband::test_support {

using Transfer = std::tuple<int, int, double, std::string>;

inline std::vector<Transfer> transfers(const sim::StepGraph& g) {
  std::vector<Transfer> out;
  for (const auto& t : g.tasks())
    if (t.kind == sim::TaskKind::transfer) out.emplace_back(t.rank, t.peer, t.bytes, t.kind_tag);
  std::sort(out.begin(), out.end());
  return out;
}

// Every task of `built` is `recorded`'s, in the same order: kind, ranks, bytes,
// seconds, tag and dependencies (the first 5 differences reported).
inline void expect_same_tasks(const sim::StepGraph& built, const sim::StepGraph& recorded) {
  ASSERT_EQ(built.tasks().size(), recorded.tasks().size());
  int mismatches = 0;
  for (size_t i = 0; i < built.tasks().size() && mismatches < 5; ++i) {
    const sim::Task &a = built.tasks()[i], &b = recorded.tasks()[i];
    const bool same = a.kind == b.kind && a.rank == b.rank && a.peer == b.peer && a.bytes == b.bytes &&
                      a.seconds == b.seconds && a.kind_tag == b.kind_tag && a.deps == b.deps;
    mismatches += !same;
    EXPECT_TRUE(same) << "task " << i << ": built " << a.kind_tag << " rank " << a.rank << " peer " << a.peer
                      << " bytes " << a.bytes << " s " << a.seconds << ", recorded " << b.kind_tag << " rank "
                      << b.rank << " peer " << b.peer << " bytes " << b.bytes << " s " << b.seconds;
  }
}

// The built-in default cut to a model whose steps record in milliseconds (2
// layers, d_model 32, 64 tokens, 2 sequences, 8 nodes), with `extra` --sets.
inline Scenario small_graph_scenario(const std::vector<std::string>& extra) {
  std::vector<std::string> sets = {"model.layers=2", "model.d_model=32", "model.heads=4", "model.kv_heads=2",
                                   "model.ffn_hidden=64", "model.seq_len=64", "network.nodes=8",
                                   "training.batch_size=2"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return builtin_scenario("default", sets);
}

}  // namespace lowband::test_support
