// One estimate for every layout: the JSON of a context, a pipeline, a pipeline x
// context and data layouts carries the common keys with one meaning (checked
// against the replay of the layout's own step graph), and each section's keys
// exactly when that section applies.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "runtime/estimate/estimate.h"
#include "runtime/parallel/dry_steps.h"
#include "runtime/parallel/layout.h"
#include "runtime/parallel/pipeline/costs.h"
#include "runtime/scenario/load.h"
#include "sim/replay.h"

namespace lowband {
namespace {

using Keys = std::set<std::string>;
const Keys kCommon = {"parallelism", "ranks", "step_seconds", "tokens_per_step", "tokens_per_s", "compute_seconds",
                      "free_network_step_seconds", "exposed_comm_seconds", "compute_utilisation",
                      "bytes_per_rank_per_step", "peak_bytes_per_rank_per_step", "model_flops_per_step", "peak_flops_per_s", "mfu", "network_model",
                      "network", "replay_wall_seconds",
                      // the physical bound: every layout has one
                      "bound_seconds", "bound_kind", "busiest_link", "busiest_link_bytes",
                      "busiest_link_bandwidth_bytes_per_s", "busiest_link_seconds", "busiest_link_bytes_by_kind", "latency_bound_seconds",
                      "compute_bound_seconds", "step_over_bound", "max_tokens_per_s"};
const Keys kData = {"replicas", "replica_shapes", "data_sync"};
const Keys kContext = {"context_ranks", "kv_codec", "sequences_in_flight", "kv_bytes_ratio", "kv_bytes_saved_fraction"};
const Keys kPipeline = {"stages", "microbatches", "schedule", "bubble_fraction", "ideal_bubble_fraction",
                        "boundary_bytes", "boundary_bytes_ratio", "boundary_codec"};
const Keys kByKind = {"exposed_kv_seconds", "exposed_boundary_seconds", "exposed_grad_sync_seconds"};
const Keys kSync = {"periodic_sync", "inner_steps", "inner_step_seconds", "sync_step_seconds", "comm_per_sync_seconds",
                    "bytes_per_rank_per_sync"};
const Keys kOuter = {"outer_compute_seconds", "message_bytes_per_replica", "part_message_bytes", "exchange",
                     "delay_steps", "window_steps", "fragments"};
const Keys kRelay = {"relay_node", "relay_bytes_per_sync"};

// R replicas of P stages of C context ranks, one rank per node, a tiny model.
Scenario layout(int R, int P, int C, std::vector<std::string> extra = {}) {
  std::vector<std::string> sets = {"model.layers=4", "model.d_model=32", "model.heads=4", "model.kv_heads=2",
                                   "model.ffn_hidden=64", "model.seq_len=64", "model.tie_embeddings=false",
                                   "network.nodes=" + std::to_string(R * P * C + 1), "network.bandwidth=100Mbps",
                                   "training.batch_size=" + std::to_string(2 * R), "devices.profile=A100-40GB",
                                   "parallel.data=" + std::to_string(R), "parallel.pipeline=" + std::to_string(P),
                                   "parallel.context=" + std::to_string(C),
                                   "parallel.microbatches=" + std::to_string(P > 1 ? 2 : 1)};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return builtin_scenario("default", sets);
}

sim::StepGraph sync_step_graph(const Scenario& s) {
  switch (parallel::layout_kind(s.parallel)) {
    case parallel::LayoutKind::data: return parallel::steady_step_graph(s, true);
    case parallel::LayoutKind::pipeline: return parallel::steady_step_graph(s);
    default: return parallel::steady_step_graph(s, true);
  }
}

// The common figures mean the same in every layout: those of the step graph's replay.
void expect_common_figures(const Scenario& s, const Estimate& e) {
  const sim::StepGraph g = sync_step_graph(s);
  const sim::ReplayResult r = sim::replay(s.network, g);
  const parallel::Layout places(s.parallel);
  const double step = e.sync ? e.sync->sync_step_seconds : e.step_seconds;
  EXPECT_NEAR(step, r.step_seconds, 1e-12 * step);
  EXPECT_EQ(e.ranks, places.ranks());
  double busiest = 0, most_sent = 0;
  for (int rank = 0; rank < places.ranks(); ++rank) {
    const int node = places.node_of(rank);
    busiest = std::max(busiest, r.rank_compute_busy_seconds[size_t(node)]);
    double sent = 0;
    for (const sim::Task& t : g.tasks()) sent += t.kind == sim::TaskKind::transfer && t.rank == node && t.peer != node ? t.bytes : 0;
    most_sent = std::max(most_sent, sent);
  }
  if (e.sync) {
    EXPECT_DOUBLE_EQ(e.sync->bytes_per_rank_per_sync.at("total"), most_sent);
    return;  // the other figures are averages over the period
  }
  EXPECT_NEAR(e.compute_seconds, busiest, 1e-12 * busiest);
  EXPECT_DOUBLE_EQ(e.free_network_step_seconds, free_network_step_seconds(g));
  EXPECT_DOUBLE_EQ(e.exposed_comm_seconds, e.step_seconds - e.free_network_step_seconds);
  EXPECT_DOUBLE_EQ(e.compute_utilisation, e.free_network_step_seconds / e.step_seconds);
  EXPECT_DOUBLE_EQ(e.bytes_per_rank_per_step.at("total"), most_sent);
  EXPECT_DOUBLE_EQ(e.tokens_per_step, double(s.training.batch_size) * s.model.seq_len);
  EXPECT_DOUBLE_EQ(e.tokens_per_s, e.tokens_per_step / e.step_seconds);
  EXPECT_DOUBLE_EQ(e.mfu, e.model_flops_per_step / (e.step_seconds * e.peak_flops_per_s));
}

Keys keys_of(const nlohmann::json& j) {
  Keys out;
  for (const auto& [key, value] : j.items()) out.insert(key);
  return out;
}

Keys with(Keys keys, const std::vector<Keys>& sections) {
  for (const Keys& k : sections) keys.insert(k.begin(), k.end());
  return keys;
}

struct Case {
  const char* parallelism;
  Scenario scenario;
  std::vector<Keys> sections;
};

TEST(EstimateJson, EveryLayoutHasTheCommonKeysAndItsSectionsOnly) {
  Scenario sparse = layout(1, 1, 4);
  sparse.compression.weight_sync = WeightSync::sparse, sparse.compression.sync_every = 4;
  Scenario relay = layout(3, 1, 1, {"parallel.data_sync.method=sparseloco", "parallel.data_sync.inner_steps=3",
                                    "parallel.data_sync.exchange=relay", "parallel.data_sync.relay_node=3"});
  const std::vector<Case> cases = {
      {"context", layout(1, 1, 4), {kContext}},
      {"context", sparse, {kContext, kSync}},
      {"pipeline", layout(1, 2, 1), {kPipeline}},
      {"pipeline x context", layout(1, 2, 2), {kContext, kPipeline, kByKind}},
      {"data", layout(2, 1, 2), {kData, kContext}},
      {"data", layout(2, 2, 1), {kData, kPipeline}},
      {"data", layout(2, 2, 2, {"parallel.data_sync.method=diloco", "parallel.data_sync.inner_steps=4"}),
       {kData, kContext, kPipeline, kByKind, kSync, kOuter}},
      {"data", relay, {kData, kSync, kOuter, kRelay}},
      {"data", layout(2, 1, 1, {"parallel.data_sync.method=diloco", "parallel.data_sync.inner_steps=4",
                                "parallel.data_sync.delay_steps=4"}),
       {kData, kSync, kOuter}},
  };
  for (const Case& c : cases) {
    const Scenario& s = c.scenario;
    SCOPED_TRACE(std::string(c.parallelism) + ": " + std::to_string(s.parallel.data) + " x " +
                 std::to_string(s.parallel.pipeline) + " x " + std::to_string(s.parallel.context));
    const Estimate e = estimate(s);
    const nlohmann::json j = to_json(e);
    EXPECT_EQ(j.at("parallelism"), c.parallelism);
    EXPECT_EQ(keys_of(j), with(kCommon, c.sections));
    expect_common_figures(s, e);
    EXPECT_EQ(j.at("step_seconds").get<double>(), e.step_seconds);
    const std::string table = format_estimate_table(s, e);
    EXPECT_EQ(table.find("K/V bytes") != std::string::npos, bool(e.context)) << table;
    EXPECT_EQ(table.find("bubble") != std::string::npos, bool(e.pipeline)) << table;
    EXPECT_EQ(table.find("comm per sync") != std::string::npos, bool(e.sync)) << table;
  }
}

}  // namespace
}  // namespace lowband

namespace lowband {
namespace {

// network.dynamics: the changing_network section replays training.steps steps on the
// trace; every other figure stays the nominal network's.
TEST(EstimateChangingNetwork, StepsOnTheTraceAgainstTheNominalRun) {
  const Scenario nominal = layout(1, 1, 2, {"training.steps=40"});
  const Estimate plain = estimate(nominal);
  EXPECT_FALSE(plain.changing_network);
  EXPECT_FALSE(to_json(plain).contains("changing_network"));
  // Bandwidth halved from the middle of step 11 on: the first 10 steps lose nothing.
  Scenario changing = nominal;
  sim::TraceSpec halved;
  halved.points = {{10.5 * plain.step_seconds, 0.5}};
  changing.network.dynamics = {{{}, sim::DynamicQuantity::bandwidth, halved}};
  const Estimate e = estimate(changing);
  EXPECT_EQ(e.step_seconds, plain.step_seconds);  // per-step figures: the nominal network
  ASSERT_TRUE(e.changing_network);
  const ChangingNetworkSection& c = *e.changing_network;
  EXPECT_EQ(c.steps, 40);
  EXPECT_NEAR(c.nominal_total_seconds, 40 * plain.step_seconds, 1e-9);
  EXPECT_NEAR(c.lost_seconds, c.total_seconds - c.nominal_total_seconds, 1e-12);
  EXPECT_GT(c.lost_seconds, 0);
  EXPECT_LT(c.total_seconds, 40 * plain.step_seconds * 2);  // at most every byte at half rate
  EXPECT_GT(c.slowest_step_seconds, plain.step_seconds);
  EXPECT_NEAR(c.tokens_per_s, e.tokens_per_step * 40 / c.total_seconds, 1e-9 * c.tokens_per_s);
  EXPECT_TRUE(to_json(e).at("changing_network").contains("lost_seconds"));
}

TEST(EstimateChangingNetwork, APeriodicSyncRunsItsSyncStepEveryPeriod) {
  // diloco every 4 steps, 12 steps, a constant trace: 3 sync steps and 9 inner ones.
  Scenario s = layout(2, 1, 1, {"parallel.data_sync.method=diloco", "parallel.data_sync.inner_steps=4",
                                "training.steps=12"});
  sim::TraceSpec constant;
  constant.points = {{0, 1}};
  s.network.dynamics = {{{}, sim::DynamicQuantity::bandwidth, constant}};
  const Estimate e = estimate(s);
  ASSERT_TRUE(e.sync && e.changing_network);
  const double expected = 3 * e.sync->sync_step_seconds + 9 * e.sync->inner_step_seconds;
  EXPECT_NEAR(e.changing_network->nominal_total_seconds, expected, 1e-9 * expected);
  EXPECT_NEAR(e.changing_network->total_seconds, expected, 1e-9 * expected);
  EXPECT_NEAR(e.changing_network->slowest_step_seconds, e.sync->sync_step_seconds, 1e-9);
}

TEST(EstimateChangingNetwork, RestartsRedoTheStepsSinceTheCheckpoint) {
  Scenario s = layout(1, 1, 2, {"training.steps=20", "training.checkpoint_every=5"});
  const double step = estimate(s).step_seconds;
  // Node 1 down from the middle of step 8 for 10 steps' time.
  sim::TraceSpec down;
  down.points = {{7.5 * step, 0}, {17.5 * step, 1}};
  s.network.dynamics = {{{sim::DynamicTarget::Kind::node, 1, -1}, sim::DynamicQuantity::state, down}};
  const Estimate waits = estimate(s);
  EXPECT_FALSE(to_json(waits).at("changing_network").contains("restarts"));
  // A watchdog of 2 steps and a relaunch of 1: gives up at 9.5, 12.5, 15.5 (each
  // relaunch stalls at once: node 1 computes first); relaunched at 16.5 it waits
  // for 17.5 and then redoes steps 6 and 7 (a checkpoint after step 5), 8, and on.
  s.network.restart = sim::RestartPolicy{2 * step, step};
  const Estimate restarts = estimate(s);
  ASSERT_TRUE(restarts.changing_network);
  EXPECT_EQ(restarts.changing_network->restarts, 3);
  EXPECT_EQ(to_json(restarts).at("changing_network").at("restarts"), 3);
  EXPECT_NEAR(restarts.changing_network->total_seconds, (17.5 + 3 + 12) * step, 0.5 * step);
  EXPECT_NEAR(waits.changing_network->total_seconds, 30 * step, 0.5 * step);
}

TEST(EstimateAllReduce, DirectSendsTheSameBytesInFewerRoundsOnAFullMesh) {
  // 4 replicas' gradient all-reduce on a full mesh: direct uses every pair's link
  // at once and 2 latencies, the ring one link per rank and 6.
  const Scenario ring = layout(4, 1, 1, {"network.topology=full_mesh"});
  Scenario direct = ring;
  direct.parallel.all_reduce = sim::AllReduceAlgorithm::direct;
  const Estimate a = estimate(ring), b = estimate(direct);
  EXPECT_EQ(a.bytes_per_rank_per_step, b.bytes_per_rank_per_step);
  EXPECT_LT(b.step_seconds, 0.8 * a.step_seconds);
  EXPECT_NEAR(a.compute_seconds, b.compute_seconds, 1e-9 * a.compute_seconds);
}

}  // namespace
}  // namespace lowband
