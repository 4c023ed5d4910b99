// Bad scenario input: each case must raise lowband::InputError whose one-line
// message names the place (file, JSON path, line and column) and what was expected.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "common/error.h"
#include "runtime/scenario/load.h"

namespace lowband {
namespace {

using nlohmann::json;

// The quickstart document, to be broken one way per test.
json base() { return json::parse(builtin_scenario_text("default")); }

std::string error_of(const json& doc) {
  try {
    parse_scenario(doc, "test.json");
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "test.json");
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
    return e.what();
  }
  ADD_FAILURE() << "no error for " << doc.dump();
  return "";
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(ScenarioErrors, UnknownKeyNamesItsPathAndTheClosestKey) {
  json d = base();
  d["network"]["bandwith"] = "1Gbps";
  EXPECT_EQ(error_of(d), "test.json: unknown key \"bandwith\" at network (did you mean \"bandwidth\"?)");
  d = base();
  d["trainig"] = json::object();
  EXPECT_CONTAINS(error_of(d), "unknown key \"trainig\" at top level (did you mean \"training\"?)");
  d = base();
  d["model"]["zzzzzzzz"] = 1;  // nothing close: list what is known
  EXPECT_CONTAINS(error_of(d), "unknown key \"zzzzzzzz\" at model (known keys: layers, d_model, heads");
  d = base();
  d["network"]["wan"] = {{"bandwidth", "1Gbps"}, {"latency", "1ms"}};  // known, but not for a star
  EXPECT_CONTAINS(error_of(d), "network.wan: key \"wan\" is not used by topology \"star\"");
}

TEST(ScenarioErrors, TcpSettingsOnlyWithTheTcpModel) {
  json d = base();
  d["network"]["tcp"] = {{"send_buffer", "16MiB"}};  // the quickstart's model is ideal
  EXPECT_CONTAINS(error_of(d), "network.tcp: only the tcp model reads it");
  d["network"]["model"] = "tcp";
  const Scenario ok = parse_scenario(d, "test.json");
  EXPECT_EQ(ok.network.tcp.send_buffer_bytes, 16.0 * 1048576);
  EXPECT_EQ(ok.network.tcp.congestion_control, sim::CongestionControl::cubic);  // defaults
  EXPECT_EQ(ok.network.tcp.connections, sim::ConnectionState::warm);
  d["network"]["tcp"] = {{"congestion_control", "reno"}};
  EXPECT_CONTAINS(error_of(d), "network.tcp.congestion_control");
  d["network"]["tcp"] = {{"send_buffer", "1KiB"}};
  EXPECT_CONTAINS(error_of(d), "network.tcp.send_buffer: must be at least 4KiB");
  d["network"]["tcp"] = {{"window", "1MiB"}};
  EXPECT_CONTAINS(error_of(d), "unknown key \"window\" at network.tcp");
}

TEST(ScenarioErrors, IdleConnectionsAndOneStreamPerPairRoundTrip) {
  json d = base();
  d["network"]["model"] = "tcp";
  const json before = to_json(parse_scenario(d, "test.json"));  // defaults: no message_order key
  EXPECT_FALSE(before["network"].contains("message_order"));
  EXPECT_EQ(before["network"]["tcp"]["connections"], "warm");
  d["network"]["tcp"] = {{"connections", "idle"}};
  d["network"]["message_order"] = "connection";
  const Scenario s = parse_scenario(d, "test.json");
  EXPECT_EQ(s.network.tcp.connections, sim::ConnectionState::idle);
  EXPECT_EQ(s.network.message_order, sim::MessageOrder::connection);
  const json resolved = to_json(s);
  EXPECT_EQ(resolved["network"]["tcp"]["connections"], "idle");
  EXPECT_EQ(resolved["network"]["message_order"], "connection");
  EXPECT_EQ(parse_scenario(resolved, "again.json").network.message_order, sim::MessageOrder::connection);
  d["network"]["tcp"] = {{"connections", "cold"}};
  EXPECT_CONTAINS(error_of(d), "network.tcp.connections");
}

TEST(ScenarioErrors, SimgridSettingsAreStringsByName) {
  json d = base();
  d["network"]["simgrid"] = {{"network/TCP-gamma", 65536}, {"network/optim", "Full"}};
  const Scenario ok = parse_scenario(d, "test.json");
  ASSERT_EQ(ok.network.simgrid_config.size(), 2u);
  EXPECT_EQ(ok.network.simgrid_config[0], (std::pair<std::string, std::string>{"network/TCP-gamma", "65536"}));
  d["network"]["simgrid"] = "network/optim:Full";
  EXPECT_CONTAINS(error_of(d), "network.simgrid: expected an object of SimGrid settings");
  d["network"]["simgrid"] = {{"network/optim", json::array()}};
  EXPECT_CONTAINS(error_of(d), "expected a string, number or boolean");
}

// Each SimGrid setting is checked up front against what SimGrid survives
// (sim/simgrid_settings.h): these crashed or aborted the replay child, or (an
// unknown key) printed SimGrid's 100-line help, after the first step had trained.
TEST(ScenarioErrors, SimgridSettingsAreCheckedBeforeSimGridSeesThem) {
  const std::vector<std::pair<json, std::string>> bad = {
      {{{"maxmin/precision", -1}}, "network.simgrid.maxmin/precision: expected a number in [1e-12, 0.001], got \"-1\""},
      {{{"maxmin/precision", "1e-5x"}}, "network.simgrid.maxmin/precision: expected a number"},
      {{{"network/model", "NS3"}}, "network.simgrid.network/model: expected \"CM02\" or \"LV08\""},
      {{{"network/model", "Constant"}}, "network.simgrid.network/model:"},
      {{{"network/model", "help"}}, "network.simgrid.network/model:"},
      {{{"cpu/model", "nope"}}, "network.simgrid.cpu/model: not a SimGrid setting lowband passes on"},
      {{{"network/bandwidth-factor", 0}}, "network.simgrid.network/bandwidth-factor: expected a number in [0.001, 1000]"},
      {{{"network/latency-factor", -5}}, "network.simgrid.network/latency-factor: expected a number"},
      {{{"network/crosstraffic", "maybe"}}, "network.simgrid.network/crosstraffic: expected true or false"},
      {{{"network/no-such-setting", 1}}, "network.simgrid.network/no-such-setting: not a SimGrid setting"},
  };
  for (const auto& [settings, message] : bad) {
    json d = base();
    d["network"]["simgrid"] = settings;
    EXPECT_CONTAINS(error_of(d), message);
  }
  json d = base();
  d["network"]["simgrid"] = {{"network/crosstraffic", true}, {"network/model", "LV08"}, {"maxmin/precision", 1e-5},
                             {"network/latency-factor", "13.01"}, {"surf/precision", 1e-9}};
  EXPECT_EQ(parse_scenario(d, "test.json").network.simgrid_config.size(), 5u);
}

TEST(ScenarioErrors, WrongTypeNamesPathAndExpectation) {
  json d = base();
  d["model"]["layers"] = "4";
  EXPECT_CONTAINS(error_of(d), "model.layers: expected an integer in 1..");
  EXPECT_CONTAINS(error_of(d), "got a string (\"4\")");
  d["model"]["layers"] = 4.5;
  EXPECT_CONTAINS(error_of(d), "model.layers: expected an integer in 1..1073741824, got 4.5");
  d = base();
  d["parallel"]["overlap"] = "yes";
  EXPECT_CONTAINS(error_of(d), "parallel.overlap: expected true or false, got a string (\"yes\")");
  d = base();
  d["network"] = "star";
  EXPECT_CONTAINS(error_of(d), "network: expected an object, got a string");
  d = base();
  d["network"]["topology"] = "ring";
  EXPECT_CONTAINS(error_of(d),
                  "network.topology: expected \"star\" or \"full_mesh\" or \"clusters\" or \"explicit\", got");
  d = base();
  d["training"]["lr"] = 0;
  EXPECT_CONTAINS(error_of(d), "training.lr: expected a number > 0, got 0");
  EXPECT_CONTAINS(error_of(json::array()), "top level: expected an object, got an array");
}

TEST(ScenarioErrors, BadUnitNamesPathAndAcceptedUnits) {
  json d = base();
  d["network"]["bandwidth"] = "300 Mbit/s";
  EXPECT_CONTAINS(error_of(d), "network.bandwidth: \"300 Mbit/s\"");
  EXPECT_CONTAINS(error_of(d), "bps Kbps Mbps Gbps Tbps");
  d["network"]["bandwidth"] = 300;  // a bare number has no unit
  EXPECT_CONTAINS(error_of(d), "network.bandwidth: expected a bandwidth string with a unit, got 300");
  d = base();
  d["network"]["latency"] = "1 hour";
  EXPECT_CONTAINS(error_of(d), "network.latency: ");
  EXPECT_CONTAINS(error_of(d), "s ms us ns");
}

TEST(ScenarioErrors, ZeroAndNegativeBandwidth) {
  json d = base();
  d["network"]["bandwidth"] = "0Mbps";
  EXPECT_EQ(error_of(d), "test.json: network.bandwidth: bandwidth must be positive, got \"0Mbps\"");
  d["network"]["bandwidth"] = "-300Mbps";
  EXPECT_CONTAINS(error_of(d), "network.bandwidth: bandwidth must be positive");
  d = base();
  d["network"]["overrides"] = {{{"node", 1}, {"bandwidth", "0Gbps"}}};
  EXPECT_CONTAINS(error_of(d), "network.overrides.0.bandwidth: bandwidth must be positive");
}

TEST(ScenarioErrors, MoreRanksThanNodes) {
  json d = base();
  d["network"]["nodes"] = 2;
  d["parallel"]["context"] = 3;
  EXPECT_EQ(error_of(d), "test.json: parallel.context: 3 ranks need 3 nodes but network has 2");
}

TEST(ScenarioErrors, OverrideIndicesOutOfRange) {
  json d = base();  // 4 nodes: 0..3
  d["network"]["overrides"] = {{{"node", 4}, {"latency", "5ms"}}};
  EXPECT_CONTAINS(error_of(d), "network.overrides.0.node: node 4 is out of range: the network has 4 nodes (0..3)");
  d["network"]["overrides"] = {{{"node", 1}, {"latency", "5ms"}}, {{"node", 1}, {"latency", "6ms"}}};
  EXPECT_CONTAINS(error_of(d), "network.overrides.1.node: node 1 is overridden twice");
  d["network"]["overrides"] = {{{"node", 1}}};
  EXPECT_CONTAINS(error_of(d), "network.overrides.0: an override needs \"bandwidth\" or \"latency\"");

  d = base();
  d["network"] = {{"model", "ideal"}, {"topology", "full_mesh"}, {"nodes", 4}, {"bandwidth", "1Gbps"},
                  {"latency", "1ms"}, {"overrides", {{{"between", {0, 7}}, {"bandwidth", "1Mbps"}}}}};
  EXPECT_CONTAINS(error_of(d), "network.overrides.0.between.1: node 7 is out of range");

  d["network"] = {{"model", "ideal"}, {"topology", "clusters"},
                  {"clusters", {{{"nodes", 2}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}},
                                {{"nodes", 2}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}}}},
                  {"wan", {{"bandwidth", "1Gbps"}, {"latency", "1ms"}}},
                  {"wan_overrides", {{{"between", {0, 2}}, {"latency", "9ms"}}}}};
  EXPECT_CONTAINS(error_of(d), "network.wan_overrides.0.between.1: cluster 2 is out of range: the network has 2 clusters");

  d = base();
  d["devices"]["overrides"] = {{{"node", 9}, {"profile", "L4"}}};
  EXPECT_CONTAINS(error_of(d), "devices.overrides.0.node: expected a node index in 0..3");
}

// A bandwidth or latency SimGrid cannot time (a subnormal crashed it) is refused
// at its path, on every kind of link: 1Kbps..1000Tbps, and 0s or 1ns..1000s.
TEST(ScenarioErrors, LinksHavePhysicalRanges) {
  for (const char* bandwidth : {"1e-310bps", "1e-300bps", "999bps", "1e-7Gbps", "1001Tbps", "1e17Bps"}) {
    json d = base();
    d["network"]["bandwidth"] = bandwidth;
    EXPECT_CONTAINS(error_of(d), "network.bandwidth: \"" + std::string(bandwidth) + "\" is out of range");
    d = base();
    d["network"]["upload_bandwidth"] = bandwidth;
    EXPECT_CONTAINS(error_of(d), "network.upload_bandwidth:");
    d = base();
    d["network"]["overrides"] = {{{"node", 1}, {"upload_bandwidth", bandwidth}}};
    EXPECT_CONTAINS(error_of(d), "network.overrides.0.upload_bandwidth:");
  }
  for (const char* latency : {"1e-320s", "0.5ns", "1001s"}) {
    json d = base();
    d["network"]["latency"] = latency;
    EXPECT_CONTAINS(error_of(d), "network.latency: \"" + std::string(latency) + "\" is out of range: a link's "
                                 "latency is 0s or 1ns..1000s");
  }
  const json link = {{"nodes", 2}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}};
  json d = base();
  d["network"] = {{"model", "ideal"}, {"topology", "clusters"}, {"clusters", {link, link}},
                  {"wan", {{"bandwidth", "1e-310bps"}, {"latency", "1ms"}}}};
  EXPECT_CONTAINS(error_of(d), "network.wan.bandwidth: \"1e-310bps\" is out of range");
  d["network"]["wan"] = {{"bandwidth", "1Gbps"}, {"latency", "1e-320s"}};
  EXPECT_CONTAINS(error_of(d), "network.wan.latency:");
  d["network"]["wan"] = {{"bandwidth", "1Gbps"}, {"latency", "1ms"}};
  d["network"]["wan_overrides"] = {{{"between", {0, 1}}, {"bandwidth", "1e-300bps"}}};
  EXPECT_CONTAINS(error_of(d), "network.wan_overrides.0.bandwidth:");
  d["network"]["wan_overrides"] = json::array();
  d["network"]["clusters"][1]["latency"] = "2000s";
  EXPECT_CONTAINS(error_of(d), "network.clusters.1.latency:");
  // The edges are in, and so is a latency of exactly 0.
  d = base();
  d["network"]["bandwidth"] = "1Kbps";
  d["network"]["upload_bandwidth"] = "1000Tbps";
  d["network"]["latency"] = "0s";
  EXPECT_NO_THROW(parse_scenario(d, "test.json"));
  d["network"]["latency"] = "1ns";
  EXPECT_NO_THROW(parse_scenario(d, "test.json"));
  d["network"]["latency"] = "1000s";
  EXPECT_NO_THROW(parse_scenario(d, "test.json"));
}

// A custom device whose step would take 1e298 s (1e-300 TFLOP/s): refused at its key.
TEST(ScenarioErrors, CustomDevicesHavePhysicalRanges) {
  const auto with = [](const char* key, json value) {
    json d = base();
    json p = {{"name", "mine"}, {"peak_tflops_fp32", 10}, {"memory_bandwidth", "1TBps"}, {"memory", "16GiB"},
              {"efficiency", 0.5}};
    p[key] = std::move(value);
    d["devices"]["custom_profiles"] = json::array({p});
    d["devices"]["profile"] = "mine";
    return d;
  };
  EXPECT_CONTAINS(error_of(with("peak_tflops_fp32", 1e-300)), "devices.custom_profiles.0.peak_tflops_fp32:");
  EXPECT_CONTAINS(error_of(with("peak_tflops_fp32", 1e7)), "devices.custom_profiles.0.peak_tflops_fp32:");
  EXPECT_CONTAINS(error_of(with("peak_tflops_bf16", 1e-300)), "devices.custom_profiles.0.peak_tflops_bf16: expected 0");
  EXPECT_CONTAINS(error_of(with("memory_bandwidth", "1e-300Bps")),
                  "devices.custom_profiles.0.memory_bandwidth: \"1e-300Bps\" is out of range");
  EXPECT_CONTAINS(error_of(with("efficiency", 1e-300)), "devices.custom_profiles.0.efficiency:");
  EXPECT_NO_THROW(parse_scenario(with("peak_tflops_bf16", 0), "test.json"));
  EXPECT_NO_THROW(parse_scenario(with("efficiency", 1), "test.json"));
}

TEST(ScenarioErrors, UnknownDeviceProfile) {
  json d = base();
  d["devices"]["profile"] = "A100-80G";
  EXPECT_CONTAINS(error_of(d), "unknown device profile \"A100-80G\" at devices.profile (did you mean \"A100-80GB\"?)");
  d = base();
  d["devices"]["overrides"] = {{{"node", 1}, {"profile", "TPU"}}};
  EXPECT_CONTAINS(error_of(d), "unknown device profile \"TPU\" at devices.overrides.0.profile");
  EXPECT_CONTAINS(error_of(d), "(known device profiles: A100-40GB, A100-80GB, H100-SXM");  // nothing close
  d = base();
  d["devices"]["custom_profiles"] = {{{"name", "L4"}, {"peak_tflops_fp32", 1}, {"memory_bandwidth", "1GBps"},
                                      {"memory", "1GiB"}, {"efficiency", 0.5}}};
  EXPECT_CONTAINS(error_of(d), "devices.custom_profiles.0.name: \"L4\" is a built-in profile");
}

TEST(ScenarioErrors, MissingRequiredKeys) {
  json d = base();
  d["model"].erase("layers");
  EXPECT_EQ(error_of(d), "test.json: model.layers: required key \"layers\" is missing");
  d = base();
  d["network"].erase("model");  // the network model must be pinned
  EXPECT_CONTAINS(error_of(d), "network.model: required key \"model\" is missing");
  d = base();
  d.erase("name");
  EXPECT_CONTAINS(error_of(d), "name: required key \"name\" is missing");
}

TEST(ScenarioErrors, ChecksAcrossSections) {
  json d = base();
  d["model"]["heads"] = 3;  // d_model 256
  EXPECT_CONTAINS(error_of(d), "model.heads: d_model 256 is not divisible by heads 3");
  d = base();
  d["model"]["kv_heads"] = 3;
  EXPECT_CONTAINS(error_of(d), "model.kv_heads: heads 4 is not divisible by kv_heads 3");
  d = base();
  d["model"]["seq_len"] = 1004;  // context 4 zigzag: 8 chunks of 125.5
  EXPECT_CONTAINS(error_of(d), "model.seq_len: seq_len 1004 does not split into 8 equal chunks");
  d["parallel"]["split"] = "contiguous";  // 4 chunks of 251: fine
  EXPECT_NO_THROW(parse_scenario(d, "test.json"));
  d = base();
  d["compression"] = {{"method", "mos"}, {"k_rank", 65}, {"v_ratio", 0.5}};  // head_dim 64
  EXPECT_CONTAINS(error_of(d), "compression.k_rank: rank 65 exceeds head_dim 64 (expected 1..64)");
  d["compression"] = {{"method", "mos"}, {"k_rank", 4}, {"k_ratio", 0.5}, {"v_ratio", 0.5}};
  EXPECT_CONTAINS(error_of(d), "compression.k_rank: give k_ratio or k_rank, not both");
  d["compression"] = {{"method", "mos"}, {"k_ratio", 1.0}, {"v_ratio", 0.5}};
  EXPECT_CONTAINS(error_of(d), "compression.k_ratio: expected a number in [0, 1), got 1.0");
  d["compression"] = {{"method", "mos"}, {"k_ratio", 0.5}};
  EXPECT_CONTAINS(error_of(d), "compression: method \"mos\" needs v_ratio (fraction removed) or v_rank");
  d["compression"] = {{"method", "none"}, {"k_ratio", 0.5}};
  EXPECT_CONTAINS(error_of(d), "compression.k_ratio: only used with method \"mos\"");
  d = base();
  d["parallel"]["data"] = 2;  // 2 replicas of 4 context ranks: more ranks than nodes, named at the replicas' key
  EXPECT_EQ(error_of(d), "test.json: parallel.data: 8 ranks (context 4 x data 2) need 8 nodes but network has 4");
  d = base();
  d["training"]["tokenizer"] = "gpt2";  // vocab 256
  EXPECT_CONTAINS(error_of(d), "model.vocab: tokenizer \"gpt2\" needs vocab >= 50257, got 256");
  d = base();
  d["name"] = "../etc";
  EXPECT_CONTAINS(error_of(d), "name: expected a name of letters, digits");
}

// The quickstart's 4 layers and 4 nodes as 2 stages x 2 context ranks.
json pipelined() {
  json d = base();
  d["parallel"]["context"] = 2;
  d["parallel"]["pipeline"] = 2;
  return d;
}

TEST(ScenarioPipelineErrors, StagesMustHoldTheModelsLayers) {
  json d = pipelined();
  EXPECT_EQ(parse_scenario(d, "test.json").parallel.stage_layer_count(1, 4), 2);  // the even split
  d["model"]["layers"] = 5;
  EXPECT_CONTAINS(error_of(d), "test.json: parallel.pipeline: model.layers 5 does not split evenly into 2 stages: "
                               "give parallel.stage_layers");
  d["parallel"]["stage_layers"] = {3, 2};
  const Scenario uneven = parse_scenario(d, "test.json");
  EXPECT_EQ(uneven.parallel.stage_first_layer(1, 5), 3);
  EXPECT_EQ(uneven.parallel.stage_layer_count(1, 5), 2);
  d["parallel"]["stage_layers"] = {5};
  EXPECT_CONTAINS(error_of(d), "parallel.stage_layers: 1 entries for 2 stages (one layer count per stage)");
  d["parallel"]["stage_layers"] = {5, 0};
  EXPECT_CONTAINS(error_of(d), "parallel.stage_layers.1: a stage with no layer (0)");
  d["parallel"]["stage_layers"] = {3, 3};
  EXPECT_CONTAINS(error_of(d), "parallel.stage_layers: the stages hold 6 layers but model.layers is 5");
  d["parallel"]["stage_layers"] = {3, "2"};
  EXPECT_CONTAINS(error_of(d), "parallel.stage_layers.1: expected an integer");
  d = pipelined();
  d["parallel"]["context"] = 1;
  d["parallel"]["pipeline"] = 4;
  d["model"]["layers"] = 2;
  EXPECT_CONTAINS(error_of(d), "parallel.pipeline: 4 stages but model.layers is 2: every stage needs a layer");
}

TEST(ScenarioPipelineErrors, StagesNeedTheirOwnNodes) {
  json d = pipelined();
  d["parallel"]["pipeline"] = 4;  // 2 context ranks x 4 stages on 4 nodes
  EXPECT_EQ(error_of(d), "test.json: parallel.context: 8 ranks (context 2 x pipeline 4) need 8 nodes but network has 4");
  d["network"]["nodes"] = 8;
  EXPECT_EQ(parse_scenario(d, "test.json").parallel.ranks(), 8);
}

TEST(ScenarioPipelineErrors, MicrobatchesDivideTheBatchAndTheScheduleIsNamed) {
  json d = pipelined();
  d["parallel"]["microbatches"] = 2;  // batch_size 1
  EXPECT_CONTAINS(error_of(d), "parallel.microbatches: 2 microbatches do not divide training.batch_size 1");
  d["training"]["batch_size"] = 6;
  EXPECT_EQ(parse_scenario(d, "test.json").parallel.microbatches, 2);
  d["parallel"]["microbatches"] = 4;
  EXPECT_CONTAINS(error_of(d), "parallel.microbatches: 4 microbatches do not divide training.batch_size 6");
  d["parallel"]["microbatches"] = 0;
  EXPECT_CONTAINS(error_of(d), "parallel.microbatches: expected an integer in 1..");
  d = pipelined();
  EXPECT_EQ(parse_scenario(d, "test.json").parallel.schedule, PipelineSchedule::one_f_one_b);
  d["parallel"]["schedule"] = "gpipe";
  EXPECT_EQ(parse_scenario(d, "test.json").parallel.schedule, PipelineSchedule::gpipe);
  d["parallel"]["schedule"] = "interleaved";
  EXPECT_CONTAINS(error_of(d), "parallel.schedule");
  EXPECT_CONTAINS(error_of(d), "\"1f1b\"");
}

TEST(ScenarioPipelineErrors, MicrobatchesNeedStagesOrContextRanksAndFitTheTags) {
  json d = pipelined();
  d["parallel"]["pipeline"] = 1;
  d["parallel"]["context"] = 1;
  d["training"]["batch_size"] = 4;
  d["parallel"]["microbatches"] = 2;
  EXPECT_CONTAINS(error_of(d), "parallel.microbatches: splits a step over pipeline stages, or keeps several "
                               "sequences in flight");
  d["parallel"]["context"] = 2;  // sequences in flight per context rank
  EXPECT_EQ(parse_scenario(d, "test.json").parallel.microbatches, 2);
  d["parallel"]["data"] = 2;  // 2 sequences per replica
  d["network"]["nodes"] = 4;
  EXPECT_EQ(parse_scenario(d, "test.json").parallel.microbatches, 2);
  d["parallel"]["data"] = 4;
  d["network"]["nodes"] = 8;
  EXPECT_CONTAINS(error_of(d), "parallel.microbatches: 2 microbatches do not divide a replica's 1 sequences");
  d["parallel"]["data"] = 1;
  d["training"]["batch_size"] = 4096;
  d["parallel"]["microbatches"] = 4096;
  d["model"]["layers"] = 4;
  EXPECT_CONTAINS(error_of(d), "parallel.microbatches: 4096 microbatches of 4 layers need 32768 message tags");
}

TEST(ScenarioCompressionErrors, OwnerKvNeedsACodec) {
  json d = base();
  d["compression"] = {{"method", "none"}, {"owner_kv", "reconstructed"}};
  EXPECT_CONTAINS(error_of(d), "compression.owner_kv: only used with method \"topk\" or \"mos\" or \"quantize\"");
  d["compression"] = {{"method", "topk"}, {"owner_kv", "projected"}};
  EXPECT_CONTAINS(error_of(d), "compression.owner_kv");
  d["compression"]["owner_kv"] = "reconstructed";
  EXPECT_EQ(parse_scenario(d, "test.json").compression.owner_kv, OwnerKv::reconstructed);
  // drop sends nothing: no owner side to choose, no ratio to set.
  d["compression"] = {{"method", "drop"}, {"owner_kv", "exact"}};
  EXPECT_CONTAINS(error_of(d), "compression.owner_kv: only used with method \"topk\" or \"mos\" or \"quantize\"");
  d["compression"] = {{"method", "drop"}, {"ratio", 0.5}};
  EXPECT_CONTAINS(error_of(d), "compression.ratio: method \"drop\" has no ratio to set");
}

TEST(ScenarioPipelineErrors, BoundaryKeysBelongToTheirMethod) {
  json d = pipelined();
  d["compression"]["boundary"] = {{"method", "subspace"}};
  EXPECT_CONTAINS(error_of(d), "compression.boundary: method \"subspace\" needs rank");
  d["compression"]["boundary"] = {{"method", "lowrank"}, {"rank", 8}, {"topk_fraction", 0.5}};
  EXPECT_CONTAINS(error_of(d), "compression.boundary.topk_fraction: only used with method \"topk\", but method is "
                               "\"lowrank\"");
  d["compression"]["boundary"] = {{"method", "quantize"}, {"rank", 8}};
  EXPECT_CONTAINS(error_of(d), "compression.boundary.rank: only used with method \"subspace\" or \"lowrank\"");
  d["compression"]["boundary"] = {{"method", "topk"}, {"bits", 4}};
  EXPECT_CONTAINS(error_of(d), "compression.boundary.bits: only used with method \"quantize\"");
  d["compression"]["boundary"] = {{"method", "quantize"}, {"bits", 6}};
  EXPECT_CONTAINS(error_of(d), "compression.boundary.bits: expected 4 or 8, got 6");
  d["compression"]["boundary"] = {{"method", "svd"}};
  EXPECT_CONTAINS(error_of(d), "compression.boundary.method");
  d["compression"]["boundary"] = {{"method", "lowrank"}, {"rank", 8}, {"ranks", 8}};
  EXPECT_CONTAINS(error_of(d), "unknown key \"ranks\" at compression.boundary");
  d["compression"]["boundary"] = {{"method", "quantize"}, {"bits", 4}, {"block", 32}};
  const BoundaryConfig q = parse_scenario(d, "test.json").compression.boundary;
  EXPECT_EQ(q.method, BoundaryMethod::quantize);
  EXPECT_EQ(q.quantize_bits, 4);
  EXPECT_EQ(q.quantize_block, 32);
}

TEST(ScenarioPipelineErrors, BoundaryChecksAcrossSections) {
  json d = pipelined();
  d["compression"]["boundary"] = {{"method", "subspace"}, {"rank", 257}};  // d_model 256
  EXPECT_CONTAINS(error_of(d), "compression.boundary.rank: rank 257 exceeds model.d_model 256");
  d["compression"]["boundary"]["rank"] = 256;
  EXPECT_EQ(parse_scenario(d, "test.json").compression.boundary.rank, 256);
  d["model"]["tie_embeddings"] = true;
  EXPECT_CONTAINS(error_of(d), "compression.boundary.method: \"subspace\" needs a frozen embedding table, but "
                               "model.tie_embeddings is true");
  // No constraint, nothing frozen, but stages split a tied embedding from its LM
  // head, which neither the trainer nor the estimate runs (check_layout).
  d["compression"]["boundary"]["method"] = "lowrank";
  EXPECT_CONTAINS(error_of(d), "model.tie_embeddings: a tied LM head is the embedding, but pipeline stages split them");
  d = base();  // one stage
  d["compression"]["boundary"] = {{"method", "topk"}};
  EXPECT_CONTAINS(error_of(d), "compression.boundary.method: no stage boundary to compress: parallel.pipeline is 1");
  d["compression"]["boundary"] = {{"method", "none"}};
  EXPECT_NO_THROW(parse_scenario(d, "test.json"));
}

TEST(ScenarioPipelineErrors, OneReplicasStagesAreAccepted) {
  json d = base();
  d["parallel"] = {{"replicas", {{{"pipeline", 2}, {"context", 2}, {"nodes", {3, 2, 1, 0}}}}}};
  const Scenario s = parse_scenario(d, "test.json");
  EXPECT_EQ(s.parallel.pipeline, 2);
  EXPECT_EQ(s.parallel.context, 2);
  EXPECT_EQ(s.parallel.node_of(0), 3);
}

TEST(ScenarioErrors, TopologiesMustConnectEveryNode) {
  json d = base();
  d["network"] = {{"model", "ideal"}, {"topology", "explicit"}, {"nodes", 4},
                  {"links", {{{"between", {0, 1}}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}},
                             {{"between", {1, 2}}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}}}}};
  EXPECT_CONTAINS(error_of(d), "network.links: node 3 is not connected to node 0");
  d["network"]["links"][1]["between"] = {1, 1};
  EXPECT_CONTAINS(error_of(d), "network.links.1.between: a link joins two different nodes");
  d["network"] = {{"model", "ideal"}, {"topology", "clusters"}, {"nodes", 5},
                  {"clusters", {{{"nodes", 2}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}},
                                {{"nodes", 2}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}}}},
                  {"wan", {{"bandwidth", "1Gbps"}, {"latency", "1ms"}}}};
  EXPECT_CONTAINS(error_of(d), "network.nodes: the clusters have 4 nodes in all, but nodes is 5");
}

class ScenarioFileErrors : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = (std::filesystem::temp_directory_path() / (std::string("lowband_") + info->name() + "_" +
                                                      std::to_string(::getpid()) + ".json")).string();
    std::ofstream(path_) << text;
    return path_;
  }
  void TearDown() override {
    if (!path_.empty()) std::filesystem::remove(path_);
  }
  static std::string error_of_file(const std::string& path, const std::vector<std::string>& sets = {}) {
    try {
      load_scenario_file(path, sets);
    } catch (const InputError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error for " << path;
    return "";
  }
  std::string path_;
};

TEST_F(ScenarioFileErrors, MissingFile) {
  EXPECT_EQ(error_of_file("/nonexistent/x.json"), "/nonexistent/x.json: no such scenario file");
}

TEST_F(ScenarioFileErrors, InvalidJsonReportsLineAndColumn) {
  // Line 4 is `    "layers": 4,,`: the second comma is column 17.
  const std::string p = write("{\n  \"name\": \"x\",\n  \"model\": {\n    \"layers\": 4,,\n  }\n}\n");
  const std::string e = error_of_file(p);
  EXPECT_EQ(e.rfind(p + ":4:17: invalid JSON: ", 0), 0u) << e;
  // A document cut short: the error is just past its end, line 2 column 12 (`  "name": 1` is 11 long).
  const std::string q = write("{\n  \"name\": 1");
  EXPECT_EQ(error_of_file(q).rfind(q + ":2:12: invalid JSON: ", 0), 0u) << error_of_file(q);
}

TEST_F(ScenarioFileErrors, DuplicateKeysAreErrors) {
  json d = base();
  std::string text = d.dump(2);
  text.replace(text.find("\"latency\""), 0, "\"latency\": \"2ms\",\n    ");
  EXPECT_CONTAINS(error_of_file(write(text)), "network.latency: duplicate key \"latency\"");
}

TEST_F(ScenarioFileErrors, ErrorsInsideAFileNameTheFile) {
  json d = base();
  d["network"]["bandwidth"] = "0bps";
  const std::string p = write(d.dump(2));
  EXPECT_EQ(error_of_file(p), p + ": network.bandwidth: bandwidth must be positive, got \"0bps\"");
}

}  // namespace
}  // namespace lowband
