// What parse, to_json and scenario_difference must agree on (issue 23): every
// key the resolved scenario.json holds is compared, nothing it drops is, and a
// difference reads as the scenario spells it (enum words, "300Mbps").
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/scenario/equal.h"
#include "runtime/scenario/load.h"

namespace lowband::test {
namespace {

// hetero-selective with a model small enough to parse fast; its 4 replicas as given.
Scenario hetero(std::vector<std::string> sets = {}) {
  return load_scenario_file(std::string(LOWBAND_SOURCE_DIR) + "/scenarios/hetero-selective.json", sets);
}

// Replicas of 1, 1, 2, 2 stages (or 1, 2, 1, 2) on nodes 0..5 of the first
// cluster: the same placement, different shapes.
Scenario shaped(const std::string& replicas) {
  return hetero({"parallel.replicas=" + replicas});
}

TEST(ScenarioDrift, DifferenceComparesEachReplica) {
  EXPECT_EQ(scenario_difference(hetero(), hetero({"parallel.replicas.2.compress_boundaries=false"})),
            "parallel.replicas.2.compress_boundaries: true vs false");
  const Scenario a = shaped(R"([{"nodes":[0]},{"nodes":[1]},{"pipeline":2,"nodes":[2,3]},{"pipeline":2,"nodes":[4,5]}])");
  const Scenario b = shaped(R"([{"nodes":[0]},{"pipeline":2,"nodes":[1,2]},{"nodes":[3]},{"pipeline":2,"nodes":[4,5]}])");
  ASSERT_EQ(a.parallel.placement, b.parallel.placement);
  EXPECT_EQ(scenario_difference(a, b).rfind("parallel.replicas.1.", 0), 0u) << scenario_difference(a, b);
}

// compression.sync_value_bits only matters with weight_sync topk_grad: the
// resolved scenario leaves it out otherwise (and a scenario that gives it there
// is refused: it would do nothing), and with topk_grad it is compared.
TEST(ScenarioDrift, WhatToJsonDropsIsNotCompared) {
  const Scenario s = hetero({});
  EXPECT_FALSE(to_json(s)["compression"].contains("sync_value_bits"));
  EXPECT_EQ(scenario_difference(parse_scenario(to_json(s), "resolved"), s), "");
  EXPECT_THROW(hetero({"compression.sync_value_bits=5"}), InputError);
  const Scenario topk = builtin_scenario("default", {"compression.weight_sync=topk_grad", "compression.sync_value_bits=5"});
  EXPECT_EQ(scenario_difference(parse_scenario(to_json(topk), "resolved"), topk), "");
  EXPECT_EQ(scenario_difference(topk, builtin_scenario("default", {"compression.weight_sync=topk_grad"})),
            "compression.sync_value_bits: 5 vs 2");
}

TEST(ScenarioDrift, DifferencesReadAsTheScenarioSpellsThem) {
  const auto with = [](const std::string& set) { return builtin_scenario("default", {set}); };
  EXPECT_EQ(scenario_difference(with("network.bandwidth=300Mbps"), with("network.bandwidth=1Gbps")),
            "network.bandwidth: 300Mbps vs 1Gbps");
  EXPECT_EQ(scenario_difference(with("network.latency=1ms"), with("network.latency=2ms")),
            "network.latency: 1ms vs 2ms");
  EXPECT_EQ(scenario_difference(with("parallel.split=zigzag"), with("parallel.split=contiguous")),
            "parallel.split: zigzag vs contiguous");
  EXPECT_EQ(scenario_difference(with("devices.timing=profile"), with("devices.timing=measured")),
            "devices.timing: profile vs measured");
  const Scenario one = builtin_scenario("default", {"parallel.context=1", "parallel.data=2", "network.nodes=2",
                                                    "training.batch_size=2"});
  const Scenario diloco = builtin_scenario("default", {"parallel.context=1", "parallel.data=2", "network.nodes=2",
                                                       "training.batch_size=2", "parallel.data_sync.method=diloco"});
  EXPECT_EQ(scenario_difference(one, diloco), "parallel.data_sync.method: all_reduce vs diloco");
}

}  // namespace
}  // namespace lowband::test
