// `estimate` for data parallelism: the graph of the trainer's step run dry
// (dry_steps.h) against the graph a real LayoutTrainer step records,
// transfer for transfer and task for task, for synchronous all-reduce replicas,
// SparseLoCo and DiLoCo at a sync step and between, and the heterogeneous
// layout of scenarios/hetero-sparseloco-small.json; the outer sync's time on an
// ideal star against the closed form of the ring collective; the estimate's
// figures and the keys its errors name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/cost_model.h"
#include "runtime/estimate/estimate.h"
#include "runtime/model/param_layout.h"
#include "runtime/parallel/data/replicas.h"
#include "runtime/parallel/dry_steps.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/load.h"
#include "runtime/sync/chunks.h"
#include "runtime/sync/outer_sync.h"
#include "runtime/sync/pack.h"
#include "sim/collectives.h"
#include "sim/network.h"
#include "tests/runtime/test_graph_support.h"

#ifndef LOWBAND_SOURCE_DIR
#error "LOWBAND_SOURCE_DIR must name the repository root"
#endif

namespace lowband::parallel {
namespace {

using test_support::transfers;

// R replicas of (pipeline, context) on nodes 0.. in rank order; a tiny model.
Scenario replicas(int R, int P, int C, DataSyncMethod method, int H, std::vector<std::string> extra = {}) {
  std::vector<std::string> sets = {"parallel.context=1", "model.layers=4", "model.d_model=32", "model.heads=4", "model.kv_heads=2",
                                   "model.ffn_hidden=64", "model.seq_len=32", "model.tie_embeddings=false",
                                   "network.nodes=" + std::to_string(R * P * C), "training.lr_warmup_steps=0",
                                   "training.batch_size=" + std::to_string(2 * R), "devices.profile=A100-40GB"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  Scenario s = builtin_scenario("default", sets);
  s.parallel.data = R, s.parallel.pipeline = P, s.parallel.context = C;
  s.parallel.data_sync.method = method;
  s.parallel.data_sync.inner_steps = H;
  s.parallel.data_sync.topk_per_chunk = 16;
  return s;
}

// Steps 0 .. steps-1 of a real trainer on fixed batches; each step's recorded
// graph against the same step of the trainer run dry.
void expect_recorded_is_estimated(const Scenario& s, int steps) {
  LayoutTrainer t(s, ComputeTiming::profile);
  const int64_t n = s.training.batch_size * s.model.seq_len;
  std::vector<int32_t> inputs, targets;
  for (int64_t i = 0; i < n; ++i) inputs.push_back(int32_t(i * 7 % s.model.vocab)), targets.push_back(int32_t(i % s.model.vocab));
  for (int k = 0; k < steps; ++k) {
    SCOPED_TRACE("step " + std::to_string(k));
    const StepRecord rec = t.train_step(k, inputs.data(), targets.data(), s.training.batch_size, true);
    const sim::StepGraph built = dry_step_graph(s, k);
    EXPECT_EQ(transfers(built), transfers(rec.graph));
    test_support::expect_same_tasks(built, rec.graph);
  }
}

int count_kind(const sim::StepGraph& g, const std::string& kind) {
  int n = 0;
  for (const sim::Task& t : g.tasks()) n += t.kind == sim::TaskKind::transfer && t.kind_tag == kind;
  return n;
}

TEST(DataEstimateGraph, AllReduceReplicasOfContextRanksAreTheRecordedStep) {
  const Scenario s = replicas(2, 1, 2, DataSyncMethod::all_reduce, 1);
  expect_recorded_is_estimated(s, 1);
  EXPECT_GT(count_kind(steady_step_graph(s, true), "grad_sync"), 0);
}

TEST(DataEstimateGraph, AllReduceReplicasOfPipelinesAreTheRecordedStep) {
  Scenario s = replicas(2, 2, 1, DataSyncMethod::all_reduce, 1);
  s.parallel.microbatches = 2;
  expect_recorded_is_estimated(s, 1);
}

TEST(DataEstimateGraph, SparselocoReplicasAtAndBetweenSyncsAreTheRecordedSteps) {
  const Scenario s = replicas(2, 1, 1, DataSyncMethod::sparseloco, 2);
  expect_recorded_is_estimated(s, 2);  // step 0 without the outer sync, step 1 with it
  EXPECT_EQ(count_kind(steady_step_graph(s, false), "pseudo_grad"), 0);
  EXPECT_GT(count_kind(steady_step_graph(s, true), "pseudo_grad"), 0);
}

TEST(DataEstimateGraph, DilocoPipelineReplicasAtASyncAreTheRecordedStep) {
  Scenario s = replicas(2, 2, 1, DataSyncMethod::diloco, 1);
  expect_recorded_is_estimated(s, 1);
}

TEST(DataEstimateGraph, HeterogeneousSparselocoScenarioIsTheRecordedStep) {
  // Single-node replicas beside 2-stage pipelines with subspace boundaries;
  // the outer sync every 2 steps so that step 1 has it.
  const Scenario s = load_scenario_file(std::string(LOWBAND_SOURCE_DIR) + "/scenarios/hetero-sparseloco-small.json",
                                        {"parallel.data_sync.inner_steps=2"});
  expect_recorded_is_estimated(s, 2);
  ASSERT_EQ(parallel::replica_parts(s).size(), 2u);  // layers [0,2) with the embedding, [2,4) with the head
  EXPECT_GT(count_kind(steady_step_graph(s, true), "act"), 0);
}

// The same with boundaries that centre on the embedding: the snapshot the first
// stage sends after the outer step is in both graphs, and only at the sync step.
TEST(DataEstimateGraph, EmbeddingResidualSnapshotIsTheRecordedStep) {
  for (const char* context : {"1", "2"}) {
    SCOPED_TRACE(std::string("context ") + context);
    std::vector<std::string> sets = {"parallel.data_sync.inner_steps=2", "compression.boundary.method=embedding_residual"};
    if (context[0] == '2')
      sets.push_back(R"(parallel.replicas=[{"context":2,"nodes":[0,1]},{"pipeline":2,"context":2,"nodes":[2,3,4,5],"compress_boundaries":true}])");
    const Scenario s =
        load_scenario_file(std::string(LOWBAND_SOURCE_DIR) + "/scenarios/hetero-sparseloco-small.json", sets);
    expect_recorded_is_estimated(s, 2);
    EXPECT_EQ(count_kind(steady_step_graph(s, false), "embed_snapshot"), 0);
    EXPECT_GT(count_kind(steady_step_graph(s, true), "embed_snapshot"), 0);
  }
}

// A replica of 2 context ranks beside one of 2 stages x 2 context ranks: the
// pipeline's ranks split the world more often, so the parts' groups carry other
// communicator numbers there; the recorded step still assembles, and equals the
// estimate's.
TEST(DataEstimateGraph, ContextReplicaBesidePipelineContextReplicaIsTheRecordedStep) {
  const Scenario s = load_scenario_file(
      std::string(LOWBAND_SOURCE_DIR) + "/scenarios/hetero-sparseloco-small.json",
      {"parallel.data_sync.inner_steps=2", "model.seq_len=32",
       R"(parallel.replicas=[{"context":2,"nodes":[0,1]},{"pipeline":2,"context":2,"nodes":[2,3,4,5]}])"});
  expect_recorded_is_estimated(s, 2);
  EXPECT_GT(count_kind(steady_step_graph(s, true), "pseudo_grad"), 0);
}

// The outer step's two compute spans on node 0's device (sync::OuterSync's costs).
double outer_sync_seconds(const Scenario& s, int64_t elements) {
  return cost::node_seconds(s, 0, sync::OuterSync::before_exchange_cost(s.parallel.data_sync, elements), "outer_sync") +
         cost::node_seconds(s, 0, sync::OuterSync::after_exchange_cost(s.parallel.data_sync, elements), "outer_sync");
}

// R single-node replicas on an ideal star: the step without the outer sync is
// compute alone, so the sync step adds exactly the ring all-gather of the R
// packed messages: (R − 1)·(S/B + 2L) with S = sync::packed_bytes, the upload
// B the bottleneck when it is the slower direction.
TEST(DataEstimate, SparselocoSyncOnAStarIsTheRingAllGather) {
  for (const char* upload : {"", "25Mbps"})
    for (int R : {2, 4}) {
      std::vector<std::string> extra = {"network.topology=star", "network.model=ideal", "network.bandwidth=100Mbps",
                                        "network.latency=2ms"};
      if (upload[0]) extra.push_back(std::string("network.upload_bandwidth=") + upload);
      const Scenario s = replicas(R, 1, 1, DataSyncMethod::sparseloco, 5, extra);
      SCOPED_TRACE("R=" + std::to_string(R) + " upload " + upload);
      const model::ParamLayout whole(s.model);
      const double S = double(sync::packed_bytes(sync::plan_chunks(whole, 4096), {16, 2}));
      // pack.h: 4·T·2^b + ceil(12·K/8) + ceil(2·K/8), K = Σ min(k, chunk) over chunks
      int64_t K = 0;
      for (const sync::Chunk& c : sync::plan_chunks(whole, 4096).chunks) K += std::min<int64_t>(16, c.size());
      EXPECT_EQ(S, 4.0 * double(whole.tensors().size()) * 4 + double((12 * K + 7) / 8) + double((2 * K + 7) / 8));
      const Estimate e = lowband::estimate(s);
      const double B = upload[0] ? 25e6 / 8 : 100e6 / 8;
      const double expected = sim::ring_all_gather_seconds(R, R * S, B, 2 * 2e-3);
      EXPECT_NEAR(expected, (R - 1) * (S / B + 4e-3), 1e-12 * expected);
      EXPECT_NEAR(e.sync->comm_per_sync_seconds, expected, 1e-5 * expected);
      // Besides the all-gather, the outer step's compute before and after it.
      const double outer = outer_sync_seconds(s, whole.count());
      EXPECT_NEAR(e.sync->outer_compute_seconds, outer, 1e-9 * outer);
      EXPECT_NEAR(e.step_seconds, e.sync->inner_step_seconds + (expected + outer) / 5, 1e-5 * e.step_seconds);
      EXPECT_DOUBLE_EQ(e.sync->message_bytes_per_replica, S);
      EXPECT_DOUBLE_EQ(e.sync->bytes_per_rank_per_sync.at("pseudo_grad"), (R - 1) * S);
      EXPECT_NEAR(e.bytes_per_rank_per_step.at("pseudo_grad"), (R - 1) * S / 5, 1e-9 * S);
      // Nothing else crosses the network: the inner step is compute alone.
      EXPECT_NEAR(e.exposed_comm_seconds, expected / 5, 1e-5 * expected);
      EXPECT_NEAR(e.compute_utilisation, e.free_network_step_seconds / e.step_seconds, 1e-12);
    }
}

// A one-node replica holds every part and syncs them all at once: beside a
// 2-stage replica on an ideal star of 25 ms links with bandwidth to spare, the
// two parts' all-gathers (one round each, 2·25 ms) overlap, so an outer step
// adds one path's latency, not two.
TEST(DataEstimate, OneNodeReplicaSyncsItsPartsTogether) {
  Scenario s = replicas(2, 1, 1, DataSyncMethod::sparseloco, 1,
                        {"network.topology=star", "network.model=ideal", "network.bandwidth=100Gbps",
                         "network.latency=25ms", "network.nodes=3"});
  s.parallel.replicas = {ReplicaConfig{1, 1, {0}, false}, ReplicaConfig{2, 1, {1, 2}, false}};
  s.parallel.placement = {0, 1, 2};
  expect_recorded_is_estimated(s, 1);
  const Estimate e = lowband::estimate(s);
  ASSERT_EQ(parallel::replica_parts(s).size(), 2u);
  EXPECT_GT(e.sync->comm_per_sync_seconds, 0.045);
  EXPECT_LT(e.sync->comm_per_sync_seconds, 0.06) << "one after the other would take 2 x 50 ms";
}

// Through the relay (node R·P·C, one past the ranks): the recorded step, with
// each part's messages going up to the relay once and down to the other
// holders, equals the estimate's; for single-node replicas, pipelines (two
// parts' groups share the relay) and the heterogeneous scenario with the relay
// in a cluster of its own.
Scenario through_relay(Scenario s) {
  const int relay = s.parallel.ranks();
  s.network.nodes = relay + 1;
  s.parallel.data_sync.exchange = DataSyncExchange::relay;
  s.parallel.data_sync.relay_node = relay;
  return s;
}

TEST(DataEstimateGraph, SparselocoThroughTheRelayIsTheRecordedStep) {
  for (const int P : {1, 2}) {
    SCOPED_TRACE("pipeline " + std::to_string(P));
    Scenario s = through_relay(replicas(3, P, 1, DataSyncMethod::sparseloco, 2));
    s.parallel.microbatches = P;
    expect_recorded_is_estimated(s, 2);
    const sim::StepGraph g = steady_step_graph(s, true);
    const int relay = 3 * P;
    ASSERT_EQ(g.ranks(), relay + 1);
    int up = 0, down = 0;
    for (const sim::Task& t : g.tasks()) {
      if (t.kind != sim::TaskKind::transfer || t.kind_tag != "pseudo_grad") continue;
      EXPECT_TRUE((t.peer == relay) != (t.rank == relay)) << t.rank << " -> " << t.peer;
      if (t.peer == relay) ++up;
      if (t.rank != relay) continue;
      ++down;  // after the upload of the same message, from another holder of the part
      ASSERT_EQ(t.deps.size(), 1u);
      const sim::Task& from = g.task(t.deps[0]);
      EXPECT_EQ(from.peer, relay);
      EXPECT_EQ(from.bytes, t.bytes);
      EXPECT_NE(from.rank, t.peer);
    }
    EXPECT_EQ(up, 3 * P);        // every rank its part's message, once
    EXPECT_EQ(down, 3 * P * 2);  // on to the 2 other replicas
    EXPECT_EQ(steady_step_graph(s, false).ranks(), relay);  // no sync, no relay
  }
  const Scenario hetero = load_scenario_file(
      std::string(LOWBAND_SOURCE_DIR) + "/scenarios/hetero-sparseloco-small.json",
      {"parallel.data_sync.inner_steps=2", "parallel.data_sync.exchange=relay",
       R"(network.clusters.3={"nodes": 1, "bandwidth": "10Gbps", "latency": "1ms"})"});
  EXPECT_EQ(hetero.parallel.data_sync.relay_node, 6);
  expect_recorded_is_estimated(hetero, 2);
}

// R single-node replicas on a star, uploads U slower than downloads D, the
// relay on node R (latency Lr): the sync adds sim::relay_all_gather_seconds,
// 2(L + Lr) + S/min(U, In/R) + (R − 1)·S/min(D, Out/R), with the relay's own
// link fat (10 Gbps) or shared (30 Mbps: its download limits the uploads, its
// upload the downloads). Each rank sends its message once; the relay R(R − 1).
TEST(DataEstimate, SparselocoThroughTheRelayIsOneUploadAndTheOthersDownloads) {
  const int R = 4;
  const double U = 25e6 / 8, D = 100e6 / 8, L = 2e-3, Lr = 3e-3;
  struct Relay {
    const char* bandwidth;
    double bps;
  };
  for (const Relay relay : {Relay{"10Gbps", 10e9}, Relay{"30Mbps", 30e6}}) {
    SCOPED_TRACE(std::string("relay ") + relay.bandwidth);
    const Scenario s = through_relay(replicas(
        R, 1, 1, DataSyncMethod::sparseloco, 5,
        {"network.nodes=" + std::to_string(R + 1), "network.topology=star", "network.model=ideal",
         "network.bandwidth=100Mbps", "network.upload_bandwidth=25Mbps",
         "network.latency=2ms", "network.overrides.0.node=" + std::to_string(R),
         std::string("network.overrides.0.bandwidth=") + relay.bandwidth, "network.overrides.0.latency=3ms"}));
    const double S = double(sync::packed_bytes(sync::plan_chunks(model::ParamLayout(s.model), 4096), {16, 2}));
    const double B = relay.bps / 8;
    const double expected = sim::relay_all_gather_seconds(R, R * S, U, D, B, B, L + Lr);
    EXPECT_NEAR(expected, 2 * (L + Lr) + S / std::min(U, B / R) + (R - 1) * S / std::min(D, B / R), 1e-12 * expected);
    const Estimate e = lowband::estimate(s);
    EXPECT_NEAR(e.sync->comm_per_sync_seconds, expected, 1e-5 * expected);
    EXPECT_DOUBLE_EQ(e.sync->bytes_per_rank_per_sync.at("pseudo_grad"), S);
    EXPECT_EQ(e.sync->relay_node, R);
    EXPECT_DOUBLE_EQ(e.sync->relay_bytes_per_sync, R * (R - 1) * S);
    EXPECT_EQ(to_json(e).at("exchange"), "relay");
    // The same sync as a ring: R − 1 uploads of S per rank.
    Scenario ring = s;
    ring.parallel.data_sync.exchange = DataSyncExchange::all_gather;
    const Estimate r = lowband::estimate(ring);
    EXPECT_NEAR(r.sync->comm_per_sync_seconds, sim::ring_all_gather_seconds(R, R * S, U, 2 * L), 1e-5 * r.sync->comm_per_sync_seconds);
    EXPECT_DOUBLE_EQ(r.sync->bytes_per_rank_per_sync.at("pseudo_grad"), (R - 1) * S);
    EXPECT_EQ(r.sync->relay_node, -1);
  }
}

// DiLoCo: the ring all-reduce of the float32 pseudo-gradient, 2(R − 1)·(4N/(R·B) + 2L).
TEST(DataEstimate, DilocoSyncOnAStarIsTheRingAllReduce) {
  const int R = 3;
  const Scenario s = replicas(R, 1, 1, DataSyncMethod::diloco, 4,
                              {"network.topology=star", "network.model=ideal", "network.bandwidth=1Gbps",
                               "network.latency=1ms"});
  const double N = double(model::ParamLayout(s.model).count());
  const Estimate e = lowband::estimate(s);
  const double expected = sim::ring_all_reduce_seconds(R, 4 * N, 1e9 / 8, 2e-3);
  EXPECT_NEAR(expected, 2 * (R - 1) * (4 * N / (R * 1e9 / 8) + 2e-3), 1e-12 * expected);
  EXPECT_NEAR(e.sync->comm_per_sync_seconds, expected, 1e-5 * expected);
  EXPECT_DOUBLE_EQ(e.sync->message_bytes_per_replica, 4 * N);
  // H = 1: every step syncs, and comm per sync is still what the sync adds.
  Scenario every = s;
  every.parallel.data_sync.inner_steps = 1;
  const Estimate one = lowband::estimate(every);
  EXPECT_NEAR(one.sync->comm_per_sync_seconds, expected, 1e-5 * expected);
  EXPECT_DOUBLE_EQ(one.step_seconds, one.sync->sync_step_seconds);
}

std::string place_of(const Scenario& s) {
  try {
    steady_step_graph(s, true);
  } catch (const InputError& e) {
    return e.place();
  }
  return "(no error)";
}

TEST(DataEstimate, RefusesWhatTheTrainerRefusesNamingTheKey) {
  Scenario s = replicas(2, 1, 1, DataSyncMethod::all_reduce, 1);
  s.parallel.replicas = {ReplicaConfig{1, 1, {0}, false}, ReplicaConfig{2, 1, {1, 2}, false}};
  EXPECT_EQ(place_of(s), "parallel.replicas.1");
  Scenario odd = replicas(2, 1, 1, DataSyncMethod::sparseloco, 2);
  odd.training.batch_size = 3;
  EXPECT_EQ(place_of(odd), "training.batch_size");
  Scenario ranks_only = replicas(2, 1, 2, DataSyncMethod::all_reduce, 1);  // a context-rank-only weight sync
  ranks_only.compression.weight_sync = WeightSync::topk_grad;
  EXPECT_EQ(place_of(ranks_only), "compression.weight_sync");
}

// network.upload_bandwidth: parsed onto the star's access links and its
// overrides (a bandwidth alone is the node's both ways), echoed by describe,
// refused where a topology has no access links and when not a bandwidth.
TEST(DataEstimate, UploadBandwidthIsParsedValidatedAndEchoed) {
  const Scenario s = builtin_scenario("default", {"network.topology=star", "network.bandwidth=500Mbps",
                                                  "network.upload_bandwidth=110Mbps", "network.latency=10ms"});
  EXPECT_DOUBLE_EQ(s.network.link.bandwidth_bytes_per_s, 500e6 / 8);
  EXPECT_DOUBLE_EQ(s.network.link.upload_bytes_per_s, 110e6 / 8);
  EXPECT_NE(sim::describe(s.network).find("500 Mbps down, 110 Mbps up / 10 ms per access link"), std::string::npos)
      << sim::describe(s.network);
  auto error = [](const std::vector<std::string>& sets) {
    try {
      builtin_scenario("default", sets);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error({"network.upload_bandwidth=0Mbps"}).find("network.upload_bandwidth: bandwidth must be positive"),
            std::string::npos);
  EXPECT_NE(error({"network.upload_bandwidth=fast"}).find("network.upload_bandwidth: \"fast\""), std::string::npos);
  EXPECT_NE(error({"network.topology=full_mesh", "network.upload_bandwidth=1Gbps"})
                .find("network.upload_bandwidth: key \"upload_bandwidth\" is not used by topology \"full_mesh\""),
            std::string::npos);
}

}  // namespace
}  // namespace lowband::parallel
