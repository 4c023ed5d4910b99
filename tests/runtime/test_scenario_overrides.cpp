// --set overrides: "dotted.path=value" applied before validation; errors name the flag.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "runtime/scenario/load.h"

namespace lowband {
namespace {

const std::string kScenarios = std::string(LOWBAND_SOURCE_DIR) + "/scenarios/";

std::string error_of(const std::string& file, const std::vector<std::string>& sets) {
  try {
    load_scenario_file(kScenarios + file, sets);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(ScenarioOverrides, ValuesParseAsJsonElseAsStrings) {
  const Scenario s = load_scenario_file(kScenarios + "quickstart.json",
                                        {"network.bandwidth=1Gbps", "training.steps=7", "parallel.overlap=false",
                                         "name=\"12\"", "network.overrides.0.node=2",
                                         "network.overrides.0.latency=3ms", "devices.overrides=[{\"node\":1,\"profile\":\"L4\"}]"});
  EXPECT_EQ(s.network.link.bandwidth_bytes_per_s, 1e9 / 8);  // "1Gbps" is not JSON: a string
  EXPECT_EQ(s.training.steps, 7);                             // 7 is JSON: a number
  EXPECT_FALSE(s.parallel.overlap);
  EXPECT_EQ(s.name, "12");
  ASSERT_EQ(s.network.node_links.size(), 1u);  // the overrides array was created, element 0 appended
  EXPECT_EQ(s.network.node_links[0].node, 2);
  EXPECT_EQ(s.network.node_links[0].link.latency_s, 3e-3);
  EXPECT_EQ(s.network.node_links[0].link.bandwidth_bytes_per_s, 1e9 / 8);  // the overridden base link
  EXPECT_EQ(s.devices.for_node(1).name, "L4");
}

TEST(ScenarioOverrides, ArrayIndicesReachExistingElements) {
  const Scenario s = load_scenario_file(kScenarios + "full-mesh-heterogeneous.json",
                                        {"network.overrides.1.bandwidth=10Mbps"});
  EXPECT_EQ(s.network.pair_links[1].link.bandwidth_bytes_per_s, 10e6 / 8);
  EXPECT_EQ(s.network.pair_links[0].link.bandwidth_bytes_per_s, 100e6 / 8);  // untouched
}

TEST(ScenarioOverrides, LaterOverridesWin) {
  const Scenario s = load_scenario_file(kScenarios + "quickstart.json", {"training.steps=5", "training.steps=9"});
  EXPECT_EQ(s.training.steps, 9);
}

TEST(ScenarioOverrides, BuiltinsTakeOverridesToo) {
  const Scenario s = builtin_scenario("default", {"parallel.context=2", "network.nodes=2"});
  EXPECT_EQ(s.parallel.context, 2);
  EXPECT_EQ(s.network.nodes, 2);
}

TEST(ScenarioOverrides, PipelineKeysTakeOverrides) {
  const Scenario g = load_scenario_file(kScenarios + "pipeline-subspace.json",
                                        {"parallel.schedule=gpipe", "compression.boundary.method=lowrank",
                                         "model.layers=5", "parallel.stage_layers=[2,1,0,1]",
                                         "parallel.stage_layers.2=1"});
  EXPECT_EQ(g.parallel.schedule, PipelineSchedule::gpipe);
  EXPECT_EQ(g.compression.boundary.method, BoundaryMethod::lowrank);
  EXPECT_EQ(g.compression.boundary.rank, 8);  // the file's
  EXPECT_EQ(g.parallel.stage_layers, (std::vector<int>{2, 1, 1, 1}));
  const Scenario q = builtin_scenario("default", {"parallel.context=2", "parallel.pipeline=2",
                                                  "compression.boundary.method=subspace",
                                                  "compression.boundary.rank=16"});
  EXPECT_EQ(q.parallel.pipeline, 2);
  EXPECT_EQ(q.compression.boundary.method, BoundaryMethod::subspace);
  EXPECT_EQ(q.compression.boundary.rank, 16);
  EXPECT_EQ(q.compression.method, CompressionMethod::none);  // K/V untouched
}

TEST(ScenarioOverrides, PipelineErrorsNameTheFlag) {
  EXPECT_EQ(error_of("quickstart.json", {"compression.boundary.method=subspace", "compression.boundary.rank=8"}),
            "--set compression.boundary.method=subspace: compression.boundary.method: no stage boundary to "
            "compress: parallel.pipeline is 1");
  EXPECT_EQ(error_of("pipeline-subspace.json", {"training.batch_size=6"}),
            "--set training.batch_size=6: parallel.microbatches: 4 microbatches do not divide training.batch_size 6");
  EXPECT_EQ(error_of("pipeline-subspace.json", {"parallel.schedule=zero_bubble"}).rfind(
                "--set parallel.schedule=zero_bubble: parallel.schedule: ", 0), 0u);
  EXPECT_EQ(error_of("pipeline-subspace.json", {"model.d_model=4", "model.heads=1", "model.kv_heads=1"}),
            "--set model.d_model=4: compression.boundary.rank: rank 8 exceeds model.d_model 4");
}

// Issue 28's unclear errors: each names the flag and the key it set.
TEST(ScenarioOverrides, ErrorsNameTheFlagAndTheKeyPlainly) {
  // "01" was read as index 1, and the error then blamed the file.
  EXPECT_EQ(error_of("hetero-selective.json", {"parallel.replicas.01.pipeline=1"}),
            "--set parallel.replicas.01.pipeline=1: index \"01\" in \"parallel.replicas.01.pipeline\": write an "
            "array index without leading zeros");
  // A value out of range named "(top level)".
  EXPECT_EQ(error_of("quickstart.json", {"training.lr=1e309"}),
            "--set training.lr=1e309: training.lr: number out of range: '1e309'");
  EXPECT_EQ(error_of("quickstart.json", {"parallel.replicas=[{\"nodes\": [0], \"x\": 1e999}]"}).rfind(
                "--set parallel.replicas=[{\"nodes\": [0], \"x\": 1e999}]: parallel.replicas.0.x: number out of range", 0),
            0u);
  // A replica whose context differs: named as such (not as a boundary), and a --set
  // of replica 0 is to blame when it is replica 0 that changed.
  EXPECT_EQ(error_of("hetero-selective.json",
                     {R"(parallel.replicas.1={"pipeline": 1, "context": 2, "nodes": [1, 2], "compress_boundaries": true})"}),
            R"(--set parallel.replicas.1={"pipeline": 1, "context": 2, "nodes": [1, 2], "compress_boundaries": true}: )"
            "parallel.replicas.1.context: context 2, but replica 0 has context 1: every replica needs the same context "
            "degree (each context rank syncs with the same context rank of the others)");
  EXPECT_EQ(error_of("hetero-selective.json", {R"(parallel.replicas.0={"context": 2, "nodes": [0, 2]})"}).rfind(
                R"(--set parallel.replicas.0={"context": 2, "nodes": [0, 2]}: parallel.replicas.1.context: context 1, )", 0),
            0u);
}

// "seed": -0 is 0 (it said "expected a non-negative integer, got 0").
TEST(ScenarioOverrides, MinusZeroIsZero) {
  EXPECT_EQ(builtin_scenario("default", {"training.seed=-0"}).training.seed, 0u);
  EXPECT_NE(error_of("quickstart.json", {"training.seed=-1"}).find("got -1"), std::string::npos);
}

TEST(ScenarioOverrides, UnknownKeyNamesTheFlag) {
  EXPECT_EQ(error_of("quickstart.json", {"network.bandwith=300Mbps"}),
            "--set network.bandwith=300Mbps: unknown key \"bandwith\" at network (did you mean \"bandwidth\"?)");
  EXPECT_EQ(error_of("quickstart.json", {"trainin.steps=3"}),
            "--set trainin.steps=3: unknown key \"trainin\" at top level (did you mean \"training\"?)");
}

TEST(ScenarioOverrides, BadValueNamesTheFlag) {
  EXPECT_EQ(error_of("quickstart.json", {"network.bandwidth=0Mbps"}),
            "--set network.bandwidth=0Mbps: network.bandwidth: bandwidth must be positive, got \"0Mbps\"");
  EXPECT_EQ(error_of("quickstart.json", {"parallel.context=16"}),
            "--set parallel.context=16: parallel.context: 16 ranks need 16 nodes but network has 4");
  EXPECT_EQ(error_of("quickstart.json", {"parallel.data=2"}),
            "--set parallel.data=2: parallel.data: 8 ranks (context 4 x data 2) need 8 nodes but network has 4");
  EXPECT_EQ(error_of("quickstart.json", {"training.steps=many"}),
            "--set training.steps=many: training.steps: expected an integer in 1..1073741824, got a string (\"many\")");
}

TEST(ScenarioOverrides, BadPathNamesTheFlag) {
  EXPECT_EQ(error_of("quickstart.json", {"network.bandwidth"}),
            "--set network.bandwidth: expected PATH=VALUE, e.g. network.bandwidth=1Gbps");
  EXPECT_EQ(error_of("quickstart.json", {"network..bandwidth=1Gbps"}),
            "--set network..bandwidth=1Gbps: empty part in path \"network..bandwidth\"");
  EXPECT_EQ(error_of("quickstart.json", {"model.layers.deep=1"}),
            "--set model.layers.deep=1: model.layers is number, not an object or array");
  EXPECT_EQ(error_of("full-mesh-heterogeneous.json", {"network.overrides.5.latency=1ms"}),
            "--set network.overrides.5.latency=1ms: index 5 is out of range: network.overrides has 3 elements");
  EXPECT_EQ(error_of("full-mesh-heterogeneous.json", {"network.overrides.first.latency=1ms"}),
            "--set network.overrides.first.latency=1ms: network.overrides is an array: expected an index, got \"first\"");
}

TEST(ScenarioOverrides, ChecksAcrossKeysNameTheFlagThatBrokeThem) {
  // network.nodes=2 leaves 4 context ranks without nodes: the error is reported at
  // parallel.context but the flag is what caused it.
  EXPECT_EQ(error_of("quickstart.json", {"training.steps=3", "network.nodes=2"}),
            "--set network.nodes=2: parallel.context: 4 ranks need 4 nodes but network has 2");
  EXPECT_EQ(error_of("quickstart.json", {"network.topology=clusters"}),
            "--set network.topology=clusters: network.bandwidth: key \"bandwidth\" is not used by topology \"clusters\"");
  EXPECT_EQ(error_of("quickstart.json", {"model.heads=3"}),
            "--set model.heads=3: model.heads: d_model 256 is not divisible by heads 3");
}

TEST(ScenarioOverrides, ErrorsFromTheFileNameTheFile) {
  // The file is broken before any override; an unrelated --set does not take the blame.
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("lowband_overrides_" + std::to_string(::getpid()) + ".json")).string();
  nlohmann::json d = nlohmann::json::parse(builtin_scenario_text("default"));
  d["network"]["nodes"] = 2;
  std::ofstream(path) << d.dump();
  std::string e;
  try {
    load_scenario_file(path, {"network.bandwidth=1Gbps", "training.steps=3"});
  } catch (const InputError& err) {
    e = err.what();
  }
  std::filesystem::remove(path);
  EXPECT_EQ(e, path + ": parallel.context: 4 ranks need 4 nodes but network has 2");
}

TEST(ScenarioOverrides, UnknownBuiltinIsAnError) {
  try {
    builtin_scenario("nope");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "no built-in scenario named \"nope\" (built-ins: default, mos-paper-centralized-100gbps, "
              "mos-paper-decentralized-300mbps, mos-paper-mos-300mbps)");
  }
}

}  // namespace
}  // namespace lowband
