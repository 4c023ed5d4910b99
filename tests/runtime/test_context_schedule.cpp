// The context-parallel step graph: bytes per rank against the closed forms of
// docs/design.md §3, the split of tokens, and the shape of the graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/cost_model.h"
#include "runtime/parallel/context/costs.h"
#include "runtime/parallel/dry_steps.h"
#include "sim/bound.h"
#include "sim/replay.h"
#include "test_estimate_support.h"

namespace lowband {
namespace {

using parallel::steady_step_graph;

TEST(ContextSchedule, TokenRangesCoverTheSequenceOnce) {
  for (CpSplit split : {CpSplit::contiguous, CpSplit::zigzag})
    for (int64_t T : {int64_t{64}, int64_t{1000}, int64_t{131072}})
      for (int P : {1, 3, 8}) {
        std::vector<int> seen(static_cast<size_t>(T), 0);
        for (int r = 0; r < P; ++r)
          for (auto [b, e] : parallel::rank_token_ranges(T, P, split, r))
            for (int64_t t = b; t < e; ++t) ++seen[static_cast<size_t>(t)];
        for (int64_t t = 0; t < T; ++t) ASSERT_EQ(seen[static_cast<size_t>(t)], 1) << t;
      }
  // Zigzag, P = 4, T = 64: rank 1 holds chunks 1 and 6 of 8 tokens.
  const auto r1 = parallel::rank_token_ranges(64, 4, CpSplit::zigzag, 1);
  ASSERT_EQ(r1.size(), 2u);
  EXPECT_EQ(r1[0], (parallel::TokenRange{8, 16}));
  EXPECT_EQ(r1[1], (parallel::TokenRange{48, 56}));
}

TEST(ContextSchedule, ForwardKvBytesPerRankMatchClosedForm) {
  // docs/design.md §3: 2·(P-1)/P·T·d_kv·bytes_per_element per rank per layer, forward;
  // dK/dV the same again, for ring and for all-gather alike.
  for (CpExchange exchange : {CpExchange::ring, CpExchange::all_gather})
    for (int P : {2, 4, 8}) {
      Scenario s = testing::small_cp_scenario(P);
      s.parallel.exchange = exchange;
      const sim::StepGraph g = steady_step_graph(s);
      const double T = 4096, d_kv = 256, bpe = 2, layers = 2;
      const double expected = layers * 2.0 * (P - 1) / P * T * d_kv * bpe;
      for (int r = 0; r < P; ++r) {
        EXPECT_DOUBLE_EQ(g.bytes_sent(r, "kv"), expected) << "P=" << P << " r=" << r;
        EXPECT_DOUBLE_EQ(g.bytes_sent(r, "dkv"), expected) << "P=" << P << " r=" << r;
      }
    }
}

TEST(ContextSchedule, BatchAndGqaScaleTheBytes) {
  // 3 sequences, 2 kv heads of 64 (d_kv = 128): 3 · 2·(P-1)/P·T·128·2 per layer.
  Scenario s = testing::small_cp_scenario(4);
  s.training.batch_size = 3;
  s.model.kv_heads = 2;
  const sim::StepGraph g = steady_step_graph(s);
  EXPECT_DOUBLE_EQ(g.bytes_sent(2, "kv"), 2 * 3 * 2.0 * 3 / 4 * 4096 * 128 * 2);
}

TEST(ContextSchedule, GradientAllReduceBytesMatchRingClosedForm) {
  // A ring all-reduce of S bytes sends 2·(P-1)/P·S per rank; S = every parameter
  // at bytes_per_element. A sparse sync sends sync_fraction of that; none on the
  // steps between syncs.
  const int P = 4;
  Scenario s = testing::small_cp_scenario(P);
  const double S = s.model.parameters() * 2;
  EXPECT_NEAR(steady_step_graph(s).bytes_sent(1, "grad_sync"), 2.0 * (P - 1) / P * S, 1e-6 * S);
  s.compression.weight_sync = WeightSync::sparse;
  s.compression.sync_fraction = 0.05;
  s.compression.sync_every = 2;
  EXPECT_NEAR(steady_step_graph(s).bytes_sent(1, "grad_sync"), 0.05 * 2.0 * (P - 1) / P * S,
              1e-6 * S);
  EXPECT_EQ(steady_step_graph(s, false).bytes_sent(1, "grad_sync"), 0);
}

TEST(ContextSchedule, SingleRankHasNoTransfers) {
  const sim::StepGraph g = steady_step_graph(testing::small_cp_scenario(1));
  for (const sim::Task& t : g.tasks()) EXPECT_EQ(t.kind, sim::TaskKind::compute);
  EXPECT_EQ(g.bytes_sent(0), 0);
}

TEST(ContextSchedule, MosShrinksKvBytesByTheRankRatio) {
  // K rank 2 and V rank 4 of head_dim 64, 4 kv heads, zigzag (2 chunks per rank):
  // a block of n = T/P tokens is n·(2+4)·4·2 bytes plus 2 chunks · 4 heads · 2 (K,V)
  // · 4 bytes of θ, instead of n·2·256·2. Of the 2 layers the final one is sent
  // uncompressed, unless compression.compress_final_layer.
  const int P = 4;
  Scenario s = testing::small_cp_scenario(P);
  s.compression.method = CompressionMethod::mos;
  s.compression.k_rank_set = 2;
  s.compression.v_rank_set = 4;
  const double n = 4096.0 / P, layers = 2;
  const double block = n * 6 * 4 * 2 + 2 * 4 * 2 * 4;
  const double plain = n * 2 * 256 * 2;
  for (bool all : {false, true}) {
    SCOPED_TRACE(all ? "every layer compressed" : "final layer uncompressed");
    s.compression.compress_final_layer = all;
    const sim::StepGraph graph = steady_step_graph(s);
    const double per_rank = (P - 1) * (all ? layers * block : block + plain);
    for (int r = 0; r < P; ++r) EXPECT_DOUBLE_EQ(graph.bytes_sent(r, "kv"), per_rank);
    EXPECT_DOUBLE_EQ(parallel::ContextCosts(s).uncompressed_kv_bytes(), 2 * P * layers * (P - 1) * plain);  // kv and dkv
  }
}

TEST(ContextSchedule, ModelFlopsMatchClosedForm) {
  // 3 x forward: per layer 2 norms (4·T·d each), QKV 2·T·d·3d, out 2·T·d², MLP
  // 6·T·d·ffn, attention 4·hd·heads·T(T+1)/2; then final norm and LM head 2·T·d·vocab.
  const Scenario s = testing::small_cp_scenario(4);
  const double T = 4096, d = 256, ffn = 1024, vocab = 1000, L = 2;
  const double layer = 2 * 4 * T * d + 2 * T * d * 3 * d + 2 * T * d * d + 6 * T * d * ffn +
                       4 * 64 * 4 * T * (T + 1) / 2;
  const double expected = 3 * (L * layer + 4 * T * d + 2 * T * d * vocab);
  EXPECT_NEAR(parallel::ContextCosts(s).step_model_flops(), expected, 1e-12 * expected);
}

TEST(ContextSchedule, ComputeOnEachRankRunsInOneChain) {
  // A GPU runs its kernels one after another: every compute task of a rank but the
  // first depends on the rank's previous compute task.
  const sim::StepGraph g = steady_step_graph(testing::small_cp_scenario(4));
  std::vector<sim::TaskId> last(4, -1);
  for (sim::TaskId id = 0; id < static_cast<sim::TaskId>(g.tasks().size()); ++id) {
    const sim::Task& t = g.task(id);
    // (the all-reduces' zero-second join tasks are bookkeeping, not kernels)
    if (t.kind != sim::TaskKind::compute || t.kind_tag == "grad_sync" || t.kind_tag == "loss") continue;
    if (last[t.rank] >= 0) {
      const std::set<sim::TaskId> deps(t.deps.begin(), t.deps.end());
      EXPECT_TRUE(deps.count(last[t.rank])) << "task " << id << " (" << t.kind_tag << ")";
    }
    last[t.rank] = id;
  }
}

TEST(ContextSchedule, RingForwardsToTheNextRankAndAllGatherSendsToEveryPeer) {
  // Ring: every K/V and dK/dV transfer goes r -> r+1, P-1 of each per rank and layer.
  // All-gather: per layer, each rank sends K/V once to each of its P-1 peers.
  const int P = 4, layers = 2;
  Scenario s = testing::small_cp_scenario(P);
  const sim::StepGraph ring = steady_step_graph(s);
  std::vector<int> sends(P, 0);
  for (const sim::Task& t : ring.tasks()) {
    if (t.kind != sim::TaskKind::transfer || (t.kind_tag != "kv" && t.kind_tag != "dkv")) continue;
    EXPECT_EQ(t.peer, (t.rank + 1) % P) << t.kind_tag;
    ++sends[t.rank];
  }
  for (int r = 0; r < P; ++r) EXPECT_EQ(sends[r], 2 * layers * (P - 1));
  s.parallel.exchange = CpExchange::all_gather;
  const sim::StepGraph gather = steady_step_graph(s);
  std::vector<std::vector<int>> kv(P, std::vector<int>(P, 0));
  for (const sim::Task& t : gather.tasks())
    if (t.kind == sim::TaskKind::transfer && t.kind_tag == "kv") ++kv[t.rank][t.peer];
  for (int r = 0; r < P; ++r)
    for (int q = 0; q < P; ++q) EXPECT_EQ(kv[r][q], r == q ? 0 : layers) << r << "->" << q;
}

TEST(ContextSchedule, WithoutOverlapAttentionWaitsForTheWholeExchange) {
  // overlap = false: each layer's first attention task depends on every K/V
  // transfer that arrives at the rank in that layer (P-1 of them).
  const int P = 4;
  Scenario s = testing::small_cp_scenario(P);
  s.parallel.overlap = false;
  const sim::StepGraph g = steady_step_graph(s);
  int checked = 0;
  std::vector<bool> waiting(P, true);  // the next attention task is a layer's first
  for (const sim::Task& t : g.tasks()) {
    if (t.kind != sim::TaskKind::compute) continue;
    if (t.kind_tag == "qkv") waiting[t.rank] = true;
    if (t.kind_tag != "attention" || !waiting[t.rank]) continue;
    waiting[t.rank] = false;
    int arrivals = 0;
    for (sim::TaskId d : t.deps)
      if (g.task(d).kind == sim::TaskKind::transfer && g.task(d).peer == t.rank) ++arrivals;
    EXPECT_EQ(arrivals, P - 1);
    ++checked;
  }
  EXPECT_EQ(checked, P * 2);  // every rank, both layers
}

// Several sequences in flight per rank (parallel.microbatches with context
// parallelism): the same bytes as one slot and the same compute, but for each
// slot reading the weights again (memory-bound matmuls: < 1 % here), so on a free
// network nearly the same step; where a layer's exchange takes about its
// compute (16K tokens, 50 Gbit/s: 1.66x the bound with one slot) each slot's K/V
// cross the links while the other slots compute, and the step nears its bound.
TEST(ContextSchedule, SequencesInFlightMoveTheSameBytesAndHideTheExchange) {
  const int P = 4;
  Scenario s = testing::small_cp_scenario(P);
  s.model.seq_len = 16384;
  s.training.batch_size = 4;
  s.parallel.exchange = CpExchange::all_gather;
  s.network.link = {50e9 / 8, 10e-6};
  std::vector<sim::StepGraph> graphs;
  std::vector<double> step, free;
  const std::vector<int> in_flight = {1, 2, 4};
  for (int m : in_flight) {
    s.parallel.microbatches = m;
    graphs.push_back(steady_step_graph(s));
    step.push_back(sim::replay(s.network, graphs.back()).step_seconds);
    Scenario fast = s;
    fast.network.link = {1e18, 0.0};
    free.push_back(sim::replay(fast.network, graphs.back()).step_seconds);
  }
  const sim::NetworkLinks links(s.network);
  for (size_t i = 0; i < in_flight.size(); ++i) {
    SCOPED_TRACE(std::to_string(in_flight[i]) + " in flight");
    for (int r = 0; r < P; ++r) {
      for (const char* kind : {"kv", "dkv", "grad_sync", "loss"})
        EXPECT_DOUBLE_EQ(graphs[i].bytes_sent(r, kind), graphs[0].bytes_sent(r, kind)) << kind << " rank " << r;
      EXPECT_GE(graphs[i].compute_seconds(r), graphs[0].compute_seconds(r) * (1 - 1e-12));
      EXPECT_LT(graphs[i].compute_seconds(r), graphs[0].compute_seconds(r) * 1.01);
    }
    EXPECT_NEAR(free[i], free[0], 0.01 * free[0]);
    auto messages = [](const sim::StepGraph& g) {  // K/V and dK/dV: one message per slot, layer and peer
      int n = 0;
      for (const sim::Task& t : g.tasks()) n += t.kind == sim::TaskKind::transfer && (t.kind_tag == "kv" || t.kind_tag == "dkv");
      return n;
    };
    EXPECT_EQ(messages(graphs[i]), in_flight[i] * messages(graphs[0]));
    sim::LinkLoad load;
    sim::add_link_load(links, graphs[i], 1.0, load);
    const double bound = std::max({sim::busiest_link(links, load).seconds,
                                   sim::latency_chain_seconds(links, graphs[i]), free[i]});
    EXPECT_GE(step[i], bound * (1 - 1e-9));
    if (i == 0) {
      EXPECT_GT(step[0], 1.5 * bound);  // one slot: the exchange waits for the layer it feeds
    } else {
      EXPECT_LT(step[i], 0.8 * step[0]);
      EXPECT_LT(step[i], 1.3 * bound);
    }
  }
}

TEST(ContextSchedule, RejectsWhatItCannotSchedule) {
  Scenario s = testing::small_cp_scenario(4);
  s.network.nodes = 3;
  try {
    steady_step_graph(s);
    FAIL() << "4 ranks on 3 nodes accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "network.nodes");
  }
  s = testing::small_cp_scenario(4);
  s.parallel.pipeline = 2;
  EXPECT_THROW(steady_step_graph(s), InputError);
  s = testing::small_cp_scenario(4);
  s.model.seq_len = 7;  // zigzag needs 8 chunks
  EXPECT_THROW(steady_step_graph(s), InputError);
  s = testing::small_cp_scenario(4);
  s.devices.node_profiles.push_back({1, sim::DeviceProfile{}});  // all zeros: no time is finite
  try {
    steady_step_graph(s);
    FAIL() << "a device with no FLOP/s accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "devices");
  }
}

}  // namespace
}  // namespace lowband
