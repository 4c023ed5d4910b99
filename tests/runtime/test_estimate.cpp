// `estimate`: the replayed step against closed forms at the limits (one rank,
// infinite bandwidth, zero compute) and against itself (overlap, heterogeneity,
// compression, sparse sync).
#include <gtest/gtest.h>

#include "runtime/estimate/estimate.h"
#include "runtime/model/param_layout.h"
#include "runtime/parallel/dry_steps.h"
#include "runtime/sync/replica_sync.h"
#include "sim/replay.h"
#include "test_estimate_support.h"

namespace lowband {
namespace {

TEST(Estimate, SingleRankStepIsItsCompute) {
  // P = 1: nothing to send, so the step is exactly the sum of the rank's compute.
  const Scenario s = testing::small_cp_scenario(1);
  const Estimate e = estimate(s);
  const double compute = parallel::steady_step_graph(s).compute_seconds(0);
  EXPECT_GT(compute, 0);
  EXPECT_NEAR(e.step_seconds, compute, 1e-9 * compute);
  EXPECT_NEAR(e.compute_seconds, compute, 1e-9 * compute);
  EXPECT_NEAR(e.exposed_comm_seconds, 0, 1e-9 * compute);
  EXPECT_EQ(e.bytes_per_rank_per_step.at("total"), 0);
}

TEST(Estimate, InfiniteBandwidthStepIsTheBusiestRanksCompute) {
  // 1e18 B/s links with no latency: communication takes no time, so the step is the
  // compute of the busiest rank (zigzag: all ranks equal up to the split).
  for (CpExchange exchange : {CpExchange::ring, CpExchange::all_gather}) {
    Scenario s = testing::small_cp_scenario(4);
    s.parallel.exchange = exchange;
    s.network.link = {1e18, 0};
    const Estimate e = estimate(s);
    EXPECT_NEAR(e.step_seconds, e.compute_seconds, 1e-6 * e.compute_seconds);
    EXPECT_NEAR(e.exposed_comm_seconds, 0, 1e-6 * e.compute_seconds);
  }
}

TEST(Estimate, ZeroComputeStepIsTheAlphaBetaExchangeTime) {
  // Instant devices on a full mesh (link bandwidth B, latency L), no weight sync
  // (a sparse sync's step between syncs).
  // Each layer's exchange must finish before the next layer, forward and backward:
  //  ring:       (P-1) rounds of (L + S/B) per layer and direction;
  //  all_gather: every block at once on its own link: (L + S/B);
  // with S = T/P·2·d_kv·bytes_per_element, the block of one rank.
  const int P = 4;
  const double B = 1e9 / 8, L = 1e-3, layers = 2;
  const double S = 4096.0 / P * 2 * 256 * 2;
  for (CpExchange exchange : {CpExchange::ring, CpExchange::all_gather}) {
    Scenario s = testing::small_cp_scenario(P);
    s.parallel.exchange = exchange;
    s.devices.default_profile = testing::instant_device();
    s.compression.weight_sync = WeightSync::sparse;
    s.compression.sync_every = 2;
    const double rounds = exchange == CpExchange::ring ? P - 1 : 1;
    const double expected = 2 * layers * rounds * (L + S / B);
    const sim::ReplayResult r = sim::replay(s.network, parallel::steady_step_graph(s, false));
    EXPECT_NEAR(r.step_seconds, expected, 1e-3 * expected);
    EXPECT_NEAR(r.exposed_comm_seconds, expected, 1e-3 * expected);
  }
}

TEST(Estimate, RingAllGatherOfTheWeightSyncFollowsTheExchange) {
  // The rank programs' own order, checked on the estimate (their dry run): with
  // instant devices the top-k gradient sync's ring all-gather of one packed
  // message M per rank starts only after the last layer's dK/dV, so the step is
  // the K/V exchange of ZeroComputeStepIsTheAlphaBetaExchangeTime plus
  // (P-1)·(L + M/B) (the deferred loss sum hides under the backward).
  const int P = 4;
  const double B = 1e9 / 8, L = 1e-3, layers = 2;
  const double S = 4096.0 / P * 2 * 256 * 2;
  Scenario s = testing::small_cp_scenario(P);
  s.devices.default_profile = testing::instant_device();
  s.compression.weight_sync = WeightSync::topk_grad;
  const double M = sync::weight_sync_wire_bytes(s, model::ParamLayout(s.model));
  const double expected = 2 * layers * (P - 1) * (L + S / B) + (P - 1) * (L + M / B);
  const Estimate e = estimate(s);
  EXPECT_NEAR(e.step_seconds, expected, 1e-3 * expected);
  EXPECT_NEAR(e.bytes_per_rank_per_step.at("grad_sync"), (P - 1) * M, 1e-9 * M);
}

TEST(Estimate, NoOverlapIsNeverFaster) {
  // On the "cpu" device the small model computes about 0.1 s per step, comparable
  // with its communication at 0.1-10 Gbps. Waiting for the whole exchange before any
  // attention can only add time; at 1 Gbps on a ring it must add visibly (> 5 %).
  for (auto topology : {sim::Topology::star, sim::Topology::full_mesh})
    for (CpExchange exchange : {CpExchange::ring, CpExchange::all_gather})
      for (double bandwidth : {1e8 / 8, 1e9 / 8, 1e10 / 8}) {
        Scenario s = testing::small_cp_scenario(4);
        s.devices.default_profile = testing::builtin_device("cpu");
        s.network.topology = topology;
        s.network.link.bandwidth_bytes_per_s = bandwidth;
        s.parallel.exchange = exchange;
        const double overlapped = estimate(s).step_seconds;
        s.parallel.overlap = false;
        const double serial = estimate(s).step_seconds;
        EXPECT_GE(serial, overlapped * (1 - 1e-9))
            << sim::to_string(topology) << (exchange == CpExchange::ring ? " ring " : " all_gather ")
            << bandwidth << " B/s";
        if (exchange == CpExchange::ring && bandwidth == 1e9 / 8) {
          EXPECT_GT(serial, 1.05 * overlapped);
        }
      }
}

TEST(Estimate, SlowNodeSlowsTheStep) {
  // Node 2 with an L4 (121 TFLOP/s bf16 vs the A100's 312): its compute grows by
  // at least 312/121 on the compute-bound pieces, and the synchronous step follows it.
  Scenario s = testing::small_cp_scenario(4);
  s.network.link = {1e18, 0};
  const Estimate fast = estimate(s);
  s.devices.node_profiles.push_back({2, testing::builtin_device("L4")});
  const Estimate slow = estimate(s);
  EXPECT_GT(slow.compute_seconds, 1.5 * fast.compute_seconds);
  EXPECT_GE(slow.step_seconds, slow.compute_seconds * (1 - 1e-9));
  EXPECT_GT(slow.step_seconds, fast.step_seconds);
  // MFU uses the sum of the ranks' peaks: 3 · 312 + 121 TFLOP/s.
  EXPECT_DOUBLE_EQ(slow.peak_flops_per_s, 3 * 312e12 + 121e12);
}

TEST(Estimate, PlacedRanksTakeTheirNodesFigures) {
  // Ranks on nodes 0, 2, 4, 6 of a uniform full mesh, rank 3's node an L4: the
  // figures of 4 ranks on nodes 0..3 with node 3 the L4 (the peak counts the L4,
  // not the idle nodes 1 and 3; the busiest rank is found among the ranks' nodes).
  Scenario plain = testing::small_cp_scenario(4);
  plain.devices.default_profile = testing::builtin_device("cpu");
  plain.network.link = {1e18, 0};
  Scenario placed = plain;
  plain.devices.node_profiles.push_back({3, testing::builtin_device("A100-80GB")});
  placed.network.nodes = 8;
  placed.parallel.placement = {0, 2, 4, 6};
  placed.devices.node_profiles.push_back({6, testing::builtin_device("A100-80GB")});
  const Estimate a = estimate(plain), b = estimate(placed);
  EXPECT_EQ(b.peak_flops_per_s, a.peak_flops_per_s);
  EXPECT_EQ(b.peak_flops_per_s, 3 * testing::builtin_device("cpu").peak_flops(sim::DType::bf16) + 312e12);
  EXPECT_NEAR(b.compute_seconds, a.compute_seconds, 1e-12 * a.compute_seconds);
  EXPECT_NEAR(b.step_seconds, a.step_seconds, 1e-9 * a.step_seconds);
  EXPECT_EQ(b.bytes_per_rank_per_step, a.bytes_per_rank_per_step);
}

TEST(Estimate, ZigzagBeatsContiguousSplit) {
  // Contiguous: the last of 4 ranks has 7x the causal attention work of the first
  // (cost-model test), so with free communication its compute sets a longer step.
  Scenario s = testing::small_cp_scenario(4);
  s.network.link = {1e18, 0};
  const Estimate zigzag = estimate(s);
  s.parallel.split = CpSplit::contiguous;
  const Estimate contiguous = estimate(s);
  EXPECT_GT(contiguous.compute_seconds, 1.1 * zigzag.compute_seconds);
  EXPECT_GT(contiguous.step_seconds, 1.1 * zigzag.step_seconds);
  EXPECT_DOUBLE_EQ(contiguous.model_flops_per_step, zigzag.model_flops_per_step);
}

TEST(Estimate, MosCompressionRatioIsTheRankRatio) {
  // K rank 2 + V rank 4 of 2·64 per kv head: a compressed layer's bytes over its
  // uncompressed ones are (6·n·4·2 + θ) / (n·2·256·2) with θ = 2 chunks · 4 heads ·
  // 2 · 4 bytes per block of n = T/P tokens. Of the 2 layers the final one crosses
  // uncompressed (ratio 1) unless compression.compress_final_layer.
  Scenario s = testing::small_cp_scenario(4);
  s.compression.method = CompressionMethod::mos;
  s.compression.k_rank_set = 2;
  s.compression.v_rank_set = 4;
  const double n = 1024;
  const double layer = (n * 6 * 4 * 2 + 2 * 4 * 2 * 4) / (n * 2 * 256 * 2);
  for (bool all : {false, true}) {
    SCOPED_TRACE(all ? "every layer compressed" : "final layer uncompressed");
    s.compression.compress_final_layer = all;
    const double expected = all ? layer : (layer + 1.0) / 2.0;
    const Estimate e = estimate(s);
    ASSERT_TRUE(e.context);
    EXPECT_NEAR(e.context->kv_bytes_ratio, expected, 1e-12);
    EXPECT_NEAR(e.context->kv_bytes_saved_fraction, 1 - expected, 1e-12);
  }
  EXPECT_EQ(estimate(testing::small_cp_scenario(4)).context->kv_bytes_ratio, 1.0);
}

// What MoS keeps, in the table and the JSON (kv_codec_ranks): K/V rank per head
// of head_dim and the layers compressed (all but the final one by default).
TEST(Estimate, ShowsTheKeptRanksAndTheCompressedLayers) {
  Scenario s = testing::small_cp_scenario(4);
  s.model.layers = 4;
  EXPECT_FALSE(estimate(s).context->kv_ranks);  // uncompressed: nothing kept to say
  EXPECT_FALSE(to_json(estimate(s)).contains("kv_codec_ranks"));
  s.compression.method = CompressionMethod::mos;
  s.compression.k_rank_set = 2;
  s.compression.v_rank_set = 4;
  const Estimate e = estimate(s);
  ASSERT_TRUE(e.context && e.context->kv_ranks);
  EXPECT_EQ(to_json(e).at("kv_codec_ranks"),
            (nlohmann::json{{"k", 2}, {"v", 4}, {"head_dim", 64}, {"compressed_layers", 3}, {"layers", 4}}));
  const std::string table = format_estimate_table(s, e);
  EXPECT_NE(table.find("K rank 2 / V rank 4 of 64 per head; layers 0–2 of 4 compressed, final layer uncompressed"),
            std::string::npos)
      << table;
  s.compression.compress_final_layer = true;
  EXPECT_EQ(compress::describe(*compress::mos_ranks(s)), "K rank 2 / V rank 4 of 64 per head; layers 0–3 of 4 compressed");
  s.compression.compress_final_layer = false;
  s.model.layers = 2;
  EXPECT_EQ(compress::describe(*compress::mos_ranks(s)),
            "K rank 2 / V rank 4 of 64 per head; layer 0 of 2 compressed, final layer uncompressed");
  s.model.layers = 1;
  EXPECT_EQ(compress::describe(*compress::mos_ranks(s)),
            "K rank 2 / V rank 4 of 64 per head; no layer compressed (the one layer is the final one, uncompressed)");
}

TEST(Estimate, SparseSyncAveragesOverItsPeriod) {
  // sync_every = 4: one step with the sync and three without, averaged.
  Scenario s = testing::small_cp_scenario(4);
  s.network.link.bandwidth_bytes_per_s = 1e8 / 8;  // slow enough for the sync to show
  s.compression.weight_sync = WeightSync::sparse;
  s.compression.sync_fraction = 0.5;
  s.compression.sync_every = 4;
  const double with = sim::replay(s.network, parallel::steady_step_graph(s, true)).step_seconds;
  const double without = sim::replay(s.network, parallel::steady_step_graph(s, false)).step_seconds;
  ASSERT_GT(with, without);
  const Estimate e = estimate(s);
  EXPECT_NEAR(e.step_seconds, (with + 3 * without) / 4, 1e-9 * with);
  ASSERT_TRUE(e.sync);
  EXPECT_EQ(e.sync->method, "sparse");
  EXPECT_EQ(e.sync->inner_steps, 4);
  EXPECT_NEAR(e.sync->sync_step_seconds, with, 1e-12 * with);
  EXPECT_NEAR(e.sync->inner_step_seconds, without, 1e-12 * with);
  EXPECT_EQ(e.sync->comm_per_sync_seconds, e.sync->sync_step_seconds - e.sync->inner_step_seconds);
  EXPECT_EQ(e.sync->exchange, "");  // no outer message
  // Every step syncs with sync_every 1: no period.
  s.compression.sync_every = 1;
  EXPECT_FALSE(estimate(s).sync);
}

TEST(Estimate, ThroughputAndMfuFollowFromTheStep) {
  Scenario s = testing::small_cp_scenario(4);
  s.training.batch_size = 2;
  const Estimate e = estimate(s);
  EXPECT_DOUBLE_EQ(e.tokens_per_s, 2 * 4096 / e.step_seconds);
  EXPECT_DOUBLE_EQ(e.mfu, e.model_flops_per_step / (e.step_seconds * 4 * 312e12));
  EXPECT_GT(e.mfu, 0);
  EXPECT_LT(e.mfu, 0.45);  // never above the device's efficiency factor
  const nlohmann::json j = to_json(e);
  EXPECT_EQ(j.at("step_seconds").get<double>(), e.step_seconds);
  EXPECT_EQ(j.at("bytes_per_rank_per_step").at("kv").get<double>(), e.bytes_per_rank_per_step.at("kv"));
  EXPECT_EQ(j.at("network_model").get<std::string>(), "ideal");
  const std::string table = format_estimate_table(s, e);
  EXPECT_NE(table.find("tokens/s"), std::string::npos);
  EXPECT_NE(table.find("ideal"), std::string::npos);
}

}  // namespace
}  // namespace lowband
