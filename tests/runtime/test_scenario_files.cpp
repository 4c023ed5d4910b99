// The shipped scenario files: every file under scenarios/ validates, the built-ins
// equal their files, the values land in the right fields, and to_json round-trips.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "runtime/scenario/equal.h"
#include "runtime/scenario/load.h"
#include "tests/shipped_scenarios.h"

#ifndef LOWBAND_SOURCE_DIR
#error "LOWBAND_SOURCE_DIR must name the repository root"
#endif

namespace lowband {
namespace {

const std::string kScenarios = std::string(LOWBAND_SOURCE_DIR) + "/scenarios";

std::vector<std::string> scenario_files() {
  std::vector<std::string> files;
  for (const std::string& rel : test_support::shipped_scenarios()) files.push_back(kScenarios + "/" + rel);
  return files;
}

Scenario file(const std::string& name) { return load_scenario_file(kScenarios + "/" + name); }

TEST(ScenarioFiles, EveryFileUnderScenariosValidates) {
  const auto files = scenario_files();
  // The nine files the project ships, and the Figure 2 reproduction's six; more may be added.
  ASSERT_GE(files.size(), 15u);
  EXPECT_NE(std::find(files.begin(), files.end(), kScenarios + "/pipeline-subspace.json"), files.end());
  for (const auto& path : files) {
    SCOPED_TRACE(path);
    Scenario s;
    ASSERT_NO_THROW(s = load_scenario_file(path));
    EXPECT_EQ(s.source, path);
    EXPECT_FALSE(s.description.empty()) << "every file says what it shows";
    EXPECT_EQ(s.name + ".json", std::filesystem::path(path).filename().string()) << "name matches file";
  }
}

TEST(ScenarioFiles, BuiltinsEqualTheirFiles) {
  const auto names = builtin_scenario_names();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "default");
  EXPECT_EQ(builtin_scenario_file("default"), "quickstart.json");
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    const Scenario builtin = builtin_scenario(name);
    EXPECT_EQ(builtin.source, "builtin:" + name);
    EXPECT_EQ(scenario_difference(builtin, file(builtin_scenario_file(name))), "");
  }
}

TEST(ScenarioFiles, QuickstartHasTheDocumentedSettings) {
  const Scenario s = builtin_scenario("default");
  EXPECT_EQ(s.model.layers, 4);
  EXPECT_EQ(s.model.d_model, 256);
  EXPECT_EQ(s.model.heads, 4);
  EXPECT_EQ(s.model.kv_heads, 4);
  EXPECT_EQ(s.model.ffn_hidden, 688);
  EXPECT_EQ(s.model.vocab, 256);
  EXPECT_EQ(s.model.seq_len, 1024);
  EXPECT_EQ(s.parallel.context, 4);
  EXPECT_EQ(s.parallel.split, CpSplit::zigzag);
  EXPECT_EQ(s.parallel.exchange, CpExchange::ring);
  EXPECT_EQ(s.network.model, sim::NetworkModel::ideal);
  EXPECT_EQ(s.network.topology, sim::Topology::star);
  EXPECT_EQ(s.network.nodes, 4);
  EXPECT_EQ(s.network.link.bandwidth_bytes_per_s, 300e6 / 8);  // 300 Mbps
  EXPECT_EQ(s.network.link.latency_s, 1e-3);
  EXPECT_EQ(s.devices.default_profile.name, "cpu");
  EXPECT_EQ(s.devices.dtype, sim::DType::fp32);
  EXPECT_EQ(s.training.steps, 200);
  EXPECT_EQ(s.training.tokenizer, "byte");
  EXPECT_EQ(s.compression.method, CompressionMethod::none);
}

TEST(ScenarioFiles, PaperScenariosMatchThePaperSetting) {
  for (const char* name : {"mos-paper-centralized-100gbps.json", "mos-paper-decentralized-300mbps.json",
                           "mos-paper-mos-300mbps.json"}) {
    SCOPED_TRACE(name);
    const Scenario s = file(name);
    EXPECT_EQ(s.model.layers, 8);
    EXPECT_EQ(s.model.d_model, 2048);
    EXPECT_EQ(s.model.heads, 8);
    EXPECT_EQ(s.model.kv_heads, 8);
    EXPECT_EQ(s.model.ffn_hidden, 8192);
    EXPECT_EQ(s.model.vocab, 50257);
    EXPECT_EQ(s.model.seq_len, 131072);
    EXPECT_EQ(s.model.bytes_per_element, 2);
    EXPECT_EQ(s.parallel.context, 8);
    EXPECT_EQ(s.network.nodes, 8);
    EXPECT_EQ(s.devices.default_profile.name, "A100-80GB");
    EXPECT_EQ(s.devices.dtype, sim::DType::bf16);
  }
  const Scenario central = file("mos-paper-centralized-100gbps.json");
  EXPECT_EQ(central.network.link.bandwidth_bytes_per_s, 100e9 / 8);
  EXPECT_EQ(central.network.link.latency_s, 5e-6);
  const Scenario slow = file("mos-paper-decentralized-300mbps.json");
  EXPECT_EQ(slow.network.link.bandwidth_bytes_per_s, 300e6 / 8);
  EXPECT_EQ(slow.network.link.latency_s, 10e-3);
  EXPECT_EQ(slow.compression.method, CompressionMethod::none);
  const Scenario mos = file("mos-paper-mos-300mbps.json");
  Scenario same_but_compression = mos;  // the MoS run differs from the uncompressed one only there
  same_but_compression.name = slow.name;
  same_but_compression.description = slow.description;
  same_but_compression.compression = slow.compression;
  EXPECT_EQ(scenario_difference(same_but_compression, slow), "");
  EXPECT_EQ(mos.compression.method, CompressionMethod::mos);
  EXPECT_EQ(mos.compression.k_ratio, 0.98);
  EXPECT_EQ(mos.compression.v_ratio, 0.95);
  // head_dim 256: K keeps round(256 * 0.02) = round(5.12) = 5, V round(256 * 0.05) = round(12.8) = 13.
  EXPECT_EQ(mos.compression.k_rank(256), 5);
  EXPECT_EQ(mos.compression.v_rank(256), 13);
  EXPECT_EQ(mos.compression.weight_sync, WeightSync::sparse);
  EXPECT_EQ(mos.compression.sync_fraction, 0.05);
  EXPECT_EQ(mos.compression.sync_every, 1);
}

TEST(ScenarioFiles, TopologyExamplesFillTheNetworkSpec) {
  const Scenario c = file("clusters-wan.json");
  EXPECT_EQ(c.network.topology, sim::Topology::clusters);
  ASSERT_EQ(c.network.clusters.size(), 2u);
  EXPECT_EQ(c.network.nodes, 8);  // 4 + 4
  EXPECT_EQ(c.network.clusters[1].nodes, 4);
  EXPECT_EQ(c.network.clusters[1].access.bandwidth_bytes_per_s, 100e9 / 8);
  EXPECT_EQ(c.network.wan.bandwidth_bytes_per_s, 1e9 / 8);
  EXPECT_EQ(c.network.wan.latency_s, 20e-3);

  const Scenario m = file("full-mesh-heterogeneous.json");
  EXPECT_EQ(m.network.topology, sim::Topology::full_mesh);
  EXPECT_EQ(m.network.link.bandwidth_bytes_per_s, 1e9 / 8);
  ASSERT_EQ(m.network.pair_links.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(m.network.pair_links[static_cast<size_t>(i)].a, i);
    EXPECT_EQ(m.network.pair_links[static_cast<size_t>(i)].b, 3);
    EXPECT_EQ(m.network.pair_links[static_cast<size_t>(i)].link.bandwidth_bytes_per_s, 100e6 / 8);
    EXPECT_EQ(m.network.pair_links[static_cast<size_t>(i)].link.latency_s, 30e-3);
  }
  EXPECT_EQ(m.devices.for_node(3).name, "RTX-4090");
  EXPECT_EQ(m.devices.for_node(0).name, "A100-40GB");
  EXPECT_EQ(m.compression.k_rank(64), 4);  // explicit ranks win over head_dim
  EXPECT_EQ(m.compression.v_rank(64), 8);

  const Scenario e = file("explicit-links.json");
  EXPECT_EQ(e.network.topology, sim::Topology::explicit_links);
  ASSERT_EQ(e.network.pair_links.size(), 4u);
  EXPECT_EQ(e.network.pair_links[3].a, 0);  // [3, 0] is stored with a < b
  EXPECT_EQ(e.network.pair_links[3].b, 3);
  EXPECT_EQ(e.network.pair_links[1].link.bandwidth_bytes_per_s, 50e6 / 8);
  const sim::DeviceProfile& home = e.devices.for_node(2);
  EXPECT_EQ(home.name, "home-16GB");
  EXPECT_EQ(home.peak_flops_bf16, 88e12);
  EXPECT_EQ(home.memory_bandwidth_bytes_per_s, 500e9);
  EXPECT_EQ(home.memory_bytes, 16.0 * 1073741824.0);
  EXPECT_EQ(home.efficiency, 0.4);

  const Scenario t = file("tcp-model.json");
  EXPECT_EQ(t.network.model, sim::NetworkModel::tcp);
  ASSERT_EQ(t.network.node_links.size(), 1u);
  EXPECT_EQ(t.network.node_links[0].node, 3);
  EXPECT_EQ(t.network.node_links[0].link.bandwidth_bytes_per_s, 200e6 / 8);
  EXPECT_EQ(t.network.node_links[0].link.latency_s, 20e-3);  // inherited from the star's link
  EXPECT_EQ(t.network.tcp.send_buffer_bytes, 4.0 * 1048576);
  EXPECT_EQ(t.network.tcp.connections, sim::ConnectionState::warm);
}

TEST(ScenarioFiles, PipelineExampleHasTheDocumentedSettings) {
  const Scenario s = file("pipeline-subspace.json");
  EXPECT_EQ(s.model.layers, 4);
  EXPECT_EQ(s.model.d_model, 64);
  EXPECT_FALSE(s.model.tie_embeddings);
  EXPECT_EQ(s.parallel.pipeline, 4);
  EXPECT_EQ(s.parallel.context, 1);
  EXPECT_EQ(s.parallel.stage_layers, (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ(s.parallel.stage_first_layer(3, s.model.layers), 3);
  EXPECT_EQ(s.parallel.microbatches, 4);
  EXPECT_EQ(s.training.batch_size, 4);
  EXPECT_EQ(s.parallel.schedule, PipelineSchedule::one_f_one_b);
  EXPECT_EQ(s.compression.method, CompressionMethod::none);
  EXPECT_EQ(s.compression.boundary.method, BoundaryMethod::subspace);
  EXPECT_EQ(s.compression.boundary.rank, 8);
  EXPECT_EQ(s.network.nodes, 4);
}

TEST(ScenarioFiles, ToJsonRoundTripsEveryFile) {
  for (const auto& path : scenario_files()) {
    SCOPED_TRACE(path);
    const Scenario s = load_scenario_file(path);
    const nlohmann::json j = to_json(s);
    const Scenario back = parse_scenario(j, "round-trip");
    EXPECT_EQ(scenario_difference(s, back), "");
    EXPECT_EQ(to_json(back), j);
  }
}

TEST(ScenarioFiles, ToJsonWritesEveryKnobWithUnits) {
  const nlohmann::json j = to_json(builtin_scenario("default"));
  EXPECT_EQ(j["network"]["bandwidth"], "300Mbps");
  EXPECT_EQ(j["network"]["latency"], "1ms");
  EXPECT_EQ(j["network"]["model"], "ideal");
  EXPECT_EQ(j["parallel"]["overlap"], true);
  EXPECT_EQ(j["parallel"]["pipeline"], 1);
  EXPECT_EQ(j["parallel"]["microbatches"], 1);
  EXPECT_EQ(j["parallel"]["schedule"], "1f1b");
  EXPECT_FALSE(j["parallel"].contains("stage_layers"));  // the even split
  EXPECT_EQ(j["compression"]["boundary"], (nlohmann::json{{"method", "none"}}));
  EXPECT_EQ(j["compression"]["warmup_steps"], 500);
  EXPECT_EQ(j["compression"]["weight_sync"], "all_reduce");
  EXPECT_EQ(j["model"]["kv_heads"], 4);
  EXPECT_EQ(j["model"]["tie_embeddings"], false);
  EXPECT_EQ(j["devices"]["dtype"], "fp32");
  EXPECT_EQ(j["training"]["seed"], 1);
}

TEST(ScenarioFiles, ToJsonRoundTripsAwkwardValuesExactly) {
  // Values with no short decimal spelling in any unit must still come back bit for bit.
  Scenario s = builtin_scenario("default");
  s.network.link = {123456.789 / 3, 0.1 + 0.2};
  s.network.node_links = {{2, {1e9 / 7, 1e-3 / 3}}};
  sim::DeviceProfile custom{"odd", 19.5e12 / 3, 0, 1e14 / 7, 2039e9 / 3, 40.0 * 1073741824.0 / 3, 0.1 + 0.2};
  s.devices.node_profiles = {{1, custom}};
  s.training.lr = 1.0 / 3;
  s.compression.method = CompressionMethod::mos;
  s.compression.k_ratio = 2.0 / 3;
  s.compression.v_rank_set = 7;
  const Scenario back = parse_scenario(to_json(s), "round-trip");
  EXPECT_EQ(scenario_difference(s, back), "");
}

TEST(ScenarioFiles, ToJsonRoundTripsPipelines) {
  // Uneven stages, GPipe, and each boundary method with values off its defaults.
  Scenario s = file("pipeline-subspace.json");
  s.model.layers = 7;
  s.parallel.stage_layers = {3, 1, 2, 1};
  s.parallel.schedule = PipelineSchedule::gpipe;
  s.parallel.microbatches = 2;
  const auto round_trip = [](const Scenario& x) {
    const nlohmann::json j = to_json(x);
    const Scenario back = parse_scenario(j, "round-trip");
    EXPECT_EQ(scenario_difference(x, back), "") << j.dump();
    EXPECT_EQ(to_json(back), j);
    return back;
  };
  const Scenario back = round_trip(s);
  EXPECT_EQ(back.parallel.stage_layers, s.parallel.stage_layers);
  EXPECT_EQ(back.parallel.schedule, PipelineSchedule::gpipe);
  EXPECT_EQ(back.compression.boundary.rank, 8);
  s.compression.boundary = {BoundaryMethod::lowrank, 63, 0.1, 8, 64};
  EXPECT_EQ(round_trip(s).compression.boundary.rank, 63);
  s.compression.boundary = {BoundaryMethod::topk, 0, 1.0 / 3, 8, 64};
  EXPECT_EQ(round_trip(s).compression.boundary.topk_fraction, 1.0 / 3);
  s.compression.boundary = {BoundaryMethod::quantize, 0, 0.1, 4, 17};
  EXPECT_EQ(round_trip(s).compression.boundary.quantize_block, 17);
  s.parallel.stage_layers.clear();  // the even split stays implicit
  s.model.layers = 8;
  EXPECT_TRUE(round_trip(s).parallel.stage_layers.empty());
}

}  // namespace
}  // namespace lowband

namespace lowband {
namespace {

// The Figure 2 reproduction (scenarios/figure2/, scripts/figure2.sh) trains the
// centralized and decentralized runs once (--also-time-on): they must train
// identically, and the MoS run may differ from them only in its compression.
TEST(ScenarioFiles, Figure2TriosDifferOnlyWhereTheyShould) {
  for (const std::string corpus : {"book", "web"}) {
    SCOPED_TRACE(corpus);
    const std::string base = kScenarios + "/figure2/fig2-" + corpus;
    const Scenario central = load_scenario_file(base + "-centralized.json");
    const Scenario decentral = load_scenario_file(base + "-decentralized.json");
    const Scenario mos = load_scenario_file(base + "-mos.json");
    ASSERT_TRUE(central.projection.scenario && decentral.projection.scenario && mos.projection.scenario);
    EXPECT_EQ(central.projection.scenario->name, "mos-paper-centralized-100gbps");
    EXPECT_EQ(decentral.projection.scenario->name, "mos-paper-decentralized-300mbps");
    EXPECT_EQ(mos.projection.scenario->name, "mos-paper-mos-300mbps");
    auto timing_only = [&](Scenario s) {
      s.name = central.name;
      s.description = central.description;
      s.network = central.network;
      s.projection = central.projection;
      return s;
    };
    EXPECT_EQ(scenario_difference(central, timing_only(decentral)), "");
    Scenario mos_numerics = timing_only(mos);
    EXPECT_EQ(mos_numerics.compression.method, CompressionMethod::mos);
    mos_numerics.compression = central.compression;
    EXPECT_EQ(scenario_difference(central, mos_numerics), "");
  }
}

// scripts/testbed/train-step.sh trains testbed-step.json and times it --also-time-on
// testbed-step-tcp.json: the twin may differ only in its network model, and the graph
// must carry the float32 bytes the MPI transport sends and the compute measured here.
TEST(ScenarioFiles, TestbedStepTwinsDifferOnlyInTheirNetworkModel) {
  const Scenario ideal = file("testbed-step.json");
  Scenario tcp = file("testbed-step-tcp.json");
  EXPECT_EQ(ideal.model.bytes_per_element, 4);
  EXPECT_EQ(ideal.devices.timing, DeviceTiming::measured);
  EXPECT_EQ(ideal.parallel.ranks(), 4);
  EXPECT_EQ(ideal.network.model, sim::NetworkModel::ideal);
  ASSERT_EQ(tcp.network.model, sim::NetworkModel::tcp);
  EXPECT_EQ(tcp.network.tcp.congestion_control, sim::CongestionControl::bbr);  // the namespaces' default
  EXPECT_EQ(tcp.network.tcp.send_buffer_bytes, 4194304.0);                     // testbed.sh's tcp_wmem
  EXPECT_EQ(tcp.network.tcp.connections, sim::ConnectionState::warm);
  tcp.name = ideal.name;
  tcp.description = ideal.description;
  tcp.network.model = ideal.network.model;
  tcp.network.tcp = ideal.network.tcp;
  EXPECT_EQ(scenario_difference(ideal, tcp), "");
}

}  // namespace
}  // namespace lowband
