// The pipeline x context step graph (P stages of C context ranks, rank s·C + c):
// its K/V exchange against context parallelism's closed form and graph, its
// boundary messages per context rank, each rank's compute, its collectives, the
// free-network step, the estimate's figures and the keys its errors name.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/error.h"
#include "runtime/compress/boundary_codec.h"
#include "runtime/model/param_layout.h"
#include "runtime/parallel/dry_steps.h"
#include "runtime/parallel/pipeline/costs.h"
#include "runtime/sync/replica_sync.h"
#include "runtime/estimate/estimate.h"
#include "sim/replay.h"
#include "test_estimate_support.h"

namespace lowband {
namespace {

using parallel::steady_step_graph;
using parallel::PipelineCosts;

// small_pp_scenario (4 layers, d_model 256, 4 kv heads of 64, 4 sequences of 4096
// tokens, 1 Gbps / 1 ms full mesh) on P stages of C context ranks.
Scenario pp_cp(int P, int C, int M) {
  Scenario s = testing::small_pp_scenario(P, M);
  s.parallel.context = C;
  s.network.nodes = P * C;
  return s;
}

std::string place_of(const Scenario& s) {
  try {
    steady_step_graph(s);
  } catch (const InputError& e) {
    return e.place();
  }
  return "(no error)";
}

TEST(PipelineContextGraph, KvBytesPerRankAreTheContextParallelFormula) {
  // docs/design.md §1.1: 2·(C−1)/C·T·d_kv·b per rank, layer and sequence forward,
  // dK/dV the same back; a rank runs its stage's 2 layers for M microbatches of
  // 4/M sequences, so per step 2 · 4 · 2·(C−1)/C·T·d_kv·b whatever M, ring or
  // all-gather. Every K/V message stays inside its stage.
  for (CpExchange exchange : {CpExchange::ring, CpExchange::all_gather})
    for (int M : {1, 2, 4}) {
      const int P = 2, C = 2;
      Scenario s = pp_cp(P, C, M);
      s.parallel.exchange = exchange;
      const sim::StepGraph g = steady_step_graph(s);
      const double expected = 2 * 4 * 2.0 * (C - 1) / C * 4096 * 256 * 2;
      for (int r = 0; r < P * C; ++r) {
        EXPECT_DOUBLE_EQ(g.bytes_sent(r, "kv"), expected) << "rank " << r << " M=" << M;
        EXPECT_DOUBLE_EQ(g.bytes_sent(r, "dkv"), expected) << "rank " << r << " M=" << M;
      }
      for (const sim::Task& t : g.tasks()) {
        if (t.kind_tag == "kv" || t.kind_tag == "dkv") {
          EXPECT_EQ(t.rank / C, t.peer / C) << t.kind_tag;
        }
      }
    }
}

TEST(PipelineContextGraph, EachStageExchangesWhatContextParallelismAloneWould) {
  // Stage s's K/V traffic is the context-parallel step's of its layers on one
  // microbatch, M times: compressed (MoS) and uncompressed, 4 context ranks. Under
  // MoS only the last stage holds the final layer, sent uncompressed (as the last
  // of the 2 layers alone is), unless compression.compress_final_layer.
  for (CompressionMethod method : {CompressionMethod::none, CompressionMethod::mos})
    for (bool all : {false, true}) {
      const int P = 2, C = 4, M = 2;
      Scenario s = pp_cp(P, C, M);
      s.compression.method = method;
      if (method == CompressionMethod::mos) s.compression.k_rank_set = 4, s.compression.v_rank_set = 8;
      s.compression.compress_final_layer = all;
      const sim::StepGraph g = steady_step_graph(s);
      Scenario cp = s;  // one microbatch of one stage's 2 layers, context parallelism alone
      cp.parallel.pipeline = 1;
      cp.parallel.microbatches = 1;
      cp.model.layers = 2;
      cp.training.batch_size = 4 / M;
      cp.network.nodes = C;
      const sim::StepGraph alone = parallel::steady_step_graph(cp);
      cp.compression.compress_final_layer = true;
      const sim::StepGraph alone_all = parallel::steady_step_graph(cp);
      for (int st = 0; st < P; ++st)
        for (int c = 0; c < C; ++c)
          for (const char* kind : {"kv", "dkv"})
            EXPECT_DOUBLE_EQ(g.bytes_sent(st * C + c, kind), M * (st == P - 1 ? alone : alone_all).bytes_sent(c, kind))
                << kind << " stage " << st << (all ? " every layer compressed" : "");
      if (method == CompressionMethod::mos) {
        EXPECT_EQ(g.bytes_sent(C, "kv") > g.bytes_sent(0, "kv"), !all);
      }
    }
}

TEST(PipelineContextGraph, BoundaryMessagesGoToTheSameContextRank) {
  // (s, c) -> (s+1, c) only: M "act" messages of codec.message_bytes(rows of c)
  // and M "act_grad" back, rows = (4/M sequences)·(4096/C tokens of each).
  for (BoundaryMethod method : {BoundaryMethod::none, BoundaryMethod::subspace}) {
    const int P = 3, C = 2, M = 2;
    Scenario s = pp_cp(P, C, M);
    s.model.layers = 3;
    s.compression.boundary.method = method;
    s.compression.boundary.rank = 8;
    const auto codec = compress::make_boundary_codec(s);
    const int64_t rows = 2 * 4096 / C;
    const double act = codec->message_bytes(rows), act_grad = codec->gradient_bytes(rows);
    EXPECT_DOUBLE_EQ(act, method == BoundaryMethod::none ? rows * 256.0 * 2 : rows * 9.0 * 2);
    const sim::StepGraph g = steady_step_graph(s);
    std::map<std::pair<int, int>, std::vector<double>> acts, grads;
    for (const sim::Task& t : g.tasks()) {
      if (t.kind_tag == "act") acts[{t.rank, t.peer}].push_back(t.bytes);
      if (t.kind_tag == "act_grad") grads[{t.rank, t.peer}].push_back(t.bytes);
    }
    std::map<std::pair<int, int>, std::vector<double>> want_acts, want_grads;
    for (int st = 0; st + 1 < P; ++st)
      for (int c = 0; c < C; ++c) {
        want_acts[{st * C + c, (st + 1) * C + c}] = std::vector<double>(M, act);
        want_grads[{(st + 1) * C + c, st * C + c}] = std::vector<double>(M, act_grad);
      }
    EXPECT_EQ(acts, want_acts);
    EXPECT_EQ(grads, want_grads);
  }
}

TEST(PipelineContextGraph, EachRankComputesItsShareOfEveryMicrobatch) {
  // Rank (s, c)'s compute seconds: per microbatch its stage's layers as
  // ContextRank runs them on one microbatch (qkv, own and unmasked remote
  // attention blocks, mlp; the backward of each), the embedding on stage 0 and
  // the head on the last, then the stage's optimizer. Summed per task, in float64.
  const int P = 2, C = 2, M = 2;
  const Scenario s = pp_cp(P, C, M);
  const PipelineCosts costs(s);
  const parallel::ContextCosts& cc = costs.context();
  const sim::StepGraph g = steady_step_graph(s);
  const sim::DeviceProfile a100 = testing::builtin_device("A100-80GB");
  auto sec = [&](const cost::Cost& c) { return cost::seconds(a100, c, sim::DType::bf16); };
  for (int st = 0; st < P; ++st)
    for (int c = 0; c < C; ++c) {
      double layer = sec(cc.pre_attention(c)) + sec(cc.post_attention(c)) + sec(cost::dense_backward(cc.pre_attention(c))) +
                     sec(cost::dense_backward(cc.post_attention(c)));
      for (int o = 0; o < C; ++o)
        if (o == c || cc.pairs(c, o) > 0) layer += sec(cc.attention(c, o, false)) + sec(cc.attention(c, o, true));
      double mb = 2 * layer;  // two layers per stage
      if (st == 0) mb += sec(cc.embed(c)) + sec(cost::dense_backward(cc.embed(c)));
      if (st == P - 1) mb += sec(cc.head(c)) + sec(cost::dense_backward(cc.head(c)));
      const double expected = M * mb + sec(costs.optimizer(st));
      EXPECT_NEAR(g.compute_seconds(st * C + c), expected, 1e-12 * expected) << "stage " << st << " rank " << c;
    }
  // The microbatch's sequences split over the ranks: half of its 2 x 4096 tokens each.
  EXPECT_DOUBLE_EQ(cc.tokens(0), 4096);
  EXPECT_DOUBLE_EQ(cc.tokens(1), 4096);
}

TEST(PipelineContextGraph, RankProgramFollowsTheSpec) {
  // Rank (1, 0) of 2 x 2, one microbatch: F then B. Forward: the boundary recv,
  // "stage_in", per layer qkv, attention (own) and attention (rank 1's block),
  // mlp, then "stage_out" (the head); backward mirrored, last layer first.
  const int C = 2;
  const sim::StepGraph g = steady_step_graph(pp_cp(2, C, 1));
  std::vector<std::string> got;
  for (const sim::Task& t : g.tasks())
    if (t.kind == sim::TaskKind::compute && t.rank == 2 && t.seconds > 0) got.push_back(t.kind_tag);
  const std::vector<std::string> layer_fwd = {"qkv", "attention", "attention", "mlp"};
  const std::vector<std::string> layer_bwd = {"mlp_bwd", "attention_bwd", "attention_bwd", "qkv_bwd"};
  std::vector<std::string> want;
  for (int l = 0; l < 2; ++l) want.insert(want.end(), layer_fwd.begin(), layer_fwd.end());
  want.push_back("stage_out");
  want.push_back("stage_out_bwd");
  for (int l = 0; l < 2; ++l) want.insert(want.end(), layer_bwd.begin(), layer_bwd.end());
  want.push_back("optimizer");
  EXPECT_EQ(got, want);  // stage_in / stage_in_bwd: zero-cost spans on stage 1
}

TEST(PipelineContextGraph, CollectivesPerRank) {
  // grad_sync: the stage's parameters ring-all-reduced over its C ranks,
  // 2·(C−1)/C·params·b per rank; loss: 16 bytes over all N = P·C ranks, 2·(N−1)
  // chunks of 16/N. MoS adds its error sums and parameter gradients over all
  // ranks (one codec for every layer); uncompressed K/V has neither.
  const int P = 2, C = 4, M = 2, N = P * C;
  Scenario s = pp_cp(P, C, M);
  const PipelineCosts costs(s);
  const sim::StepGraph plain = steady_step_graph(s);
  for (int r = 0; r < N; ++r) {
    const double params = costs.parameters(r / C);
    EXPECT_NEAR(plain.bytes_sent(r, "grad_sync"), 2.0 * (C - 1) / C * params * 2, 1e-9 * params);
    EXPECT_NEAR(plain.bytes_sent(r, "loss"), 2.0 * (N - 1) * 16 / N, 1e-12);
    EXPECT_EQ(plain.bytes_sent(r, "codec_grad") + plain.bytes_sent(r, "codec_error"), 0);
  }
  for (const sim::Task& t : plain.tasks()) {
    if (t.kind_tag == "grad_sync" && t.kind == sim::TaskKind::transfer) {
      EXPECT_EQ(t.rank / C, t.peer / C);
    }
  }
  s.compression.method = CompressionMethod::mos;
  s.compression.k_rank_set = 4, s.compression.v_rank_set = 8;
  const sim::StepGraph mos = steady_step_graph(s);
  // Learned rotation: ψ (head_dim) and b per (layer, K/V, kv head), float32; error
  // sums 4 doubles per layer, on the loss's all-reduce (no collective of their own).
  const double codec_params = 4.0 * 2 * 4 * (64 + 1);
  for (int r = 0; r < N; ++r) {
    EXPECT_NEAR(mos.bytes_sent(r, "codec_grad"), 2.0 * (N - 1) / N * codec_params * 4, 1e-9);
    EXPECT_EQ(mos.bytes_sent(r, "codec_error"), 0);
    EXPECT_NEAR(mos.bytes_sent(r, "loss"), 2.0 * (N - 1) / N * (16 + 4 * 4 * 8), 1e-9);
  }
}

TEST(PipelineContextGraph, FreeNetworkStepIsTheComputeCriticalPath) {
  // No network cost: the replayed step is the graph's longest chain of compute
  // (float64 here), nothing is exposed, and it is at least the busiest rank's
  // compute plus the pipeline's fill: the other stages' first forward.
  for (PipelineSchedule schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
    for (CpExchange exchange : {CpExchange::ring, CpExchange::all_gather}) {
      Scenario s = pp_cp(2, 2, 2);
      s.parallel.schedule = schedule;
      s.parallel.exchange = exchange;
      s.network.link = {1e30, 0};
      const sim::StepGraph g = steady_step_graph(s);
      const double path = free_network_step_seconds(g);  // against the replay on a free network
      const sim::ReplayResult r = sim::replay(s.network, g);
      EXPECT_NEAR(r.step_seconds, path, 1e-9 * path);
      double busiest = 0;
      for (int rank = 0; rank < 4; ++rank) busiest = std::max(busiest, g.compute_seconds(rank));
      EXPECT_GT(path, busiest);
      const Estimate e = lowband::estimate(s);
      EXPECT_NEAR(e.step_seconds, path, 1e-9 * path);
      EXPECT_NEAR(e.exposed_comm_seconds, 0, 1e-9 * path);
      EXPECT_NEAR(e.exposed_by_kind->kv_seconds, 0, 1e-9 * path);
      EXPECT_NEAR(e.exposed_by_kind->boundary_seconds, 0, 1e-9 * path);
      EXPECT_NEAR(e.exposed_by_kind->grad_sync_seconds, 0, 1e-9 * path);
    }
}

TEST(PipelineContextGraph, GradientBucketsOfAStage) {
  // A stage's buckets, in the order its backward finishes them: the head (last
  // stage: final norm + LM head), its layers last first, the embedding (first
  // stage); together its whole layout. The whole model's stay as they were.
  const ModelConfig m = testing::small_pp_scenario(2, 1).model;
  const double layer = cost::layer_parameters(m), d = m.d_model, V = m.vocab;
  struct Case {
    model::StageSpan span;
    std::vector<int> layers;  // -1: head or embedding
    std::vector<double> sizes;
  };
  const std::vector<Case> cases = {
      {{0, 2, true, false}, {1, 0, -1}, {layer, layer, V * d}},
      {{1, 2, false, false}, {2, 1}, {layer, layer}},
      {{2, 2, false, true}, {-1, 3, 2}, {d + V * d, layer, layer}},
      {{}, {-1, 3, 2, 1, 0, -1}, {d + V * d, layer, layer, layer, layer, V * d}}};
  for (const Case& c : cases) {
    const model::ParamLayout layout(m, c.span);
    const std::vector<sync::GradBucket> buckets = sync::gradient_buckets(layout);
    ASSERT_EQ(buckets.size(), c.layers.size());
    int64_t covered = 0;
    for (size_t i = 0; i < buckets.size(); ++i) {
      EXPECT_EQ(buckets[i].layer, c.layers[i]);
      EXPECT_DOUBLE_EQ(double(buckets[i].end - buckets[i].begin), c.sizes[i]) << "bucket " << i;
      covered += buckets[i].end - buckets[i].begin;
    }
    EXPECT_EQ(covered, layout.count());
  }
}

TEST(PipelineContextGraph, ContextOneKeepsTheStageProgram) {
  // C = 1: one "stage_fwd" per F and one "stage_bwd" per B, no K/V traffic, no
  // gradient sync: today's pipeline program.
  const sim::StepGraph g = steady_step_graph(testing::small_pp_scenario(2, 2));
  std::set<std::string> kinds;
  for (const sim::Task& t : g.tasks()) kinds.insert(t.kind_tag);
  EXPECT_EQ(kinds, (std::set<std::string>{"act", "act_grad", "loss", "optimizer", "stage_bwd", "stage_fwd"}));
}

TEST(PipelineContextEstimate, ReportsTheExchangeAndTheLayout) {
  const int P = 2, C = 2, M = 2;
  const Scenario s = pp_cp(P, C, M);
  const Estimate e = lowband::estimate(s);
  const double kv = 2 * 4 * 2.0 * (C - 1) / C * 4096 * 256 * 2;
  EXPECT_EQ(e.context->context_ranks, C);
  EXPECT_DOUBLE_EQ(e.bytes_per_rank_per_step.at("kv"), kv);
  EXPECT_DOUBLE_EQ(e.bytes_per_rank_per_step.at("dkv"), kv);
  EXPECT_DOUBLE_EQ(e.context->kv_bytes_ratio, 1);
  ASSERT_EQ(e.pipeline->boundaries.size(), 1u);  // the C rank pairs of the one boundary together
  EXPECT_DOUBLE_EQ(e.pipeline->boundaries[0].forward_bytes, 4 * 4096.0 * 256 * 2);
  EXPECT_DOUBLE_EQ(e.pipeline->boundary_bytes_ratio, 1);
  // On the 1 Gbps mesh the exchange and the boundaries both cost time.
  EXPECT_GT(e.exposed_by_kind->kv_seconds, 0);
  EXPECT_GT(e.exposed_by_kind->boundary_seconds, 0);
  EXPECT_GT(e.exposed_by_kind->grad_sync_seconds, 0);
  EXPECT_LE(e.exposed_by_kind->kv_seconds, e.exposed_comm_seconds + 1e-9);
  double peak = 0;
  for (int r = 0; r < P * C; ++r) peak += s.devices.for_node(r).peak_flops(s.devices.dtype);
  EXPECT_DOUBLE_EQ(e.peak_flops_per_s, peak);
  const nlohmann::json j = to_json(e);
  EXPECT_EQ(j.at("parallelism"), "pipeline x context");
  EXPECT_EQ(j.at("ranks"), P * C);
  EXPECT_DOUBLE_EQ(j.at("bytes_per_rank_per_step").at("kv").get<double>(), kv);
  const std::string table = format_estimate_table(s, e);
  EXPECT_NE(table.find("2 stages x 2 context ranks"), std::string::npos) << table;
  EXPECT_NE(table.find("exposed by kind"), std::string::npos) << table;
  // MoS K 4, V 8 of 64: (4 + 8)/(2·64) of the K/V bytes plus θ per block in 3
  // of the 4 layers, the final one uncompressed; every layer with compress_final_layer.
  Scenario mos = s;
  mos.compression.method = CompressionMethod::mos;
  mos.compression.k_rank_set = 4, mos.compression.v_rank_set = 8;
  EXPECT_NEAR(lowband::estimate(mos).context->kv_bytes_ratio, (3 * 12.0 / 128 + 1) / 4, 0.01);
  mos.compression.compress_final_layer = true;
  EXPECT_NEAR(lowband::estimate(mos).context->kv_bytes_ratio, 12.0 / 128, 0.01);
}

TEST(PipelineContextGraph, ErrorsNameTheirKeys) {
  Scenario s = pp_cp(2, 0, 2);
  EXPECT_EQ(place_of(s), "parallel.context");
  s = pp_cp(2, 2, 2);
  s.network.nodes = 3;
  EXPECT_EQ(place_of(s), "network.nodes");
  s = pp_cp(2, 1, 2);  // stages without context ranks: nothing to sync
  s.compression.weight_sync = WeightSync::sparse;
  EXPECT_EQ(place_of(s), "compression.weight_sync");
  s.parallel.context = 2, s.network.nodes = 4;  // with them, any weight sync
  EXPECT_EQ(place_of(s), "(no error)");
  s = pp_cp(2, 4, 2);
  s.model.seq_len = 6;  // 8 zigzag chunks
  EXPECT_EQ(place_of(s), "model.seq_len");
  s = pp_cp(2, 2, 3);  // 3 microbatches of 4 sequences
  EXPECT_EQ(place_of(s), "parallel.microbatches");
  try {
    Scenario few = pp_cp(2, 2, 2);
    few.network.nodes = 3;
    steady_step_graph(few);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("2 pipeline stages x 2 context ranks"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lowband
