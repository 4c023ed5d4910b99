// ContextLayerProgram (what `estimate` appends per layer of a pipeline x context
// rank) against the program ContextRank really runs: a recorded context-parallel
// step (profile timing) holds, per rank and in order, the same per-layer compute
// spans with the same seconds, and the same "kv" and "dkv" transfers, as the
// graph assembled from ContextLayerProgram's events for every layer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/compress/make_codec.h"
#include "runtime/parallel/context_layer_program.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/load.h"
#include "tests/runtime/test_graph_support.h"

namespace lowband::parallel::test {
namespace {

using Span = std::pair<std::string, double>;

bool layer_kind(const std::string& k) {
  for (const char* want : {"qkv", "attention", "mlp", "mlp_bwd", "attention_bwd", "qkv_bwd"})
    if (k == want) return true;
  return false;
}

std::vector<Span> layer_spans(const sim::StepGraph& g, int rank) {
  std::vector<Span> out;
  for (const sim::Task& t : g.tasks())
    if (t.kind == sim::TaskKind::compute && t.rank == rank && layer_kind(t.kind_tag)) out.emplace_back(t.kind_tag, t.seconds);
  return out;
}

std::vector<test_support::Transfer> kv_transfers(const sim::StepGraph& g) {
  std::vector<test_support::Transfer> out;
  for (const auto& t : test_support::transfers(g))
    if (std::get<3>(t) == "kv" || std::get<3>(t) == "dkv") out.push_back(t);
  return out;
}

class LayerProgram : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(LayerProgram, IsWhatContextRankRecords) {
  std::vector<std::string> sets = {"model.layers=2", "model.d_model=32", "model.heads=4", "model.kv_heads=2",
                                   "model.ffn_hidden=64", "model.seq_len=64", "network.nodes=8",
                                   "training.batch_size=2"};
  sets.insert(sets.end(), GetParam().begin(), GetParam().end());
  const Scenario s = builtin_scenario("default", sets);
  LayoutTrainer cp(s, ComputeTiming::profile);
  std::vector<int32_t> in(size_t(s.training.batch_size * s.model.seq_len));
  for (size_t i = 0; i < in.size(); ++i) in[i] = int32_t((i * 37 + 11) % 256);
  const sim::StepGraph recorded = cp.train_step(0, in.data(), in.data(), s.training.batch_size).graph;

  const int C = s.parallel.context;
  const ContextCosts costs(s);
  const auto codec = compress::make_kv_codec(s);
  const ContextLayerProgram program(s, costs, *codec);
  ContextGroup group;
  for (int c = 0; c < C; ++c) group.ranks.push_back(c);
  std::vector<comm::RankLog> logs(static_cast<size_t>(C));
  for (int c = 0; c < C; ++c) {
    for (int l = 0; l < s.model.layers; ++l) program.forward(logs[size_t(c)], group, c, l, c);
    for (int l = s.model.layers - 1; l >= 0; --l) program.backward(logs[size_t(c)], group, c, l, c);
  }
  std::vector<const comm::RankLog*> views;
  for (const auto& log : logs) views.push_back(&log);
  const sim::StepGraph built = comm::assemble_step_graph(views);

  EXPECT_EQ(kv_transfers(built), kv_transfers(recorded));
  EXPECT_FALSE(kv_transfers(built).empty());
  for (int c = 0; c < C; ++c) {
    const std::vector<Span> want = layer_spans(recorded, c), got = layer_spans(built, c);
    ASSERT_EQ(got.size(), want.size()) << "rank " << c;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].first, want[i].first) << "rank " << c << " span " << i;
      EXPECT_DOUBLE_EQ(got[i].second, want[i].second) << "rank " << c << " span " << i << " " << got[i].first;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Configs, LayerProgram,
    ::testing::Values(std::vector<std::string>{"parallel.context=4", "parallel.split=zigzag", "parallel.exchange=ring"},
                      std::vector<std::string>{"parallel.context=4", "parallel.split=contiguous",
                                               "parallel.exchange=all_gather"},
                      std::vector<std::string>{"parallel.context=3", "model.seq_len=60", "parallel.overlap=false"},
                      std::vector<std::string>{"parallel.context=4", "compression.method=mos",
                                               "compression.k_ratio=0.75", "compression.v_ratio=0.5",
                                               "compression.warmup_steps=0"}));

}  // namespace
}  // namespace lowband::parallel::test
