// scenario_difference (runtime/scenario/equal.h) names what differs by the keys
// a user writes.
#include <gtest/gtest.h>

#include <string>

#include "runtime/scenario/equal.h"
#include "runtime/scenario/load.h"

namespace lowband::test {
namespace {

// A resumed run's scenario that differs in the network names the scenario's own
// keys (network.bandwidth), not the resolved struct's (bandwidth_bytes_per_s).
TEST(ScenarioDifference, NamesTheNetworkKeysAUserWrites) {
  const std::string diff = scenario_difference(builtin_scenario("default", {"network.bandwidth=300Mbps"}),
                                               builtin_scenario("default", {"network.bandwidth=1Gbps"}));
  EXPECT_EQ(diff.rfind("network.bandwidth:", 0), 0u) << diff;
  EXPECT_EQ(diff.find("bytes_per_s"), std::string::npos) << diff;
  const std::string lat = scenario_difference(builtin_scenario("default", {"network.latency=1ms"}),
                                              builtin_scenario("default", {"network.latency=2ms"}));
  EXPECT_EQ(lat.rfind("network.latency:", 0), 0u) << lat;
}

// What decides the training of a pipeline is compared: each stage's layers (an
// explicit even split equals none), the microbatches, the schedule, the boundary codec.
TEST(ScenarioDifference, ComparesThePipelineAsTrained) {
  const auto pipelined = [](std::vector<std::string> sets) {
    sets.insert(sets.begin(), {"parallel.context=2", "parallel.pipeline=2", "training.batch_size=4"});
    return builtin_scenario("default", sets);
  };
  const Scenario even = pipelined({});
  EXPECT_EQ(scenario_difference(even, pipelined({"parallel.stage_layers=[2,2]"})), "");
  EXPECT_EQ(scenario_difference(even, pipelined({"parallel.stage_layers=[3,1]"})),
            "parallel.stage_layers.0: 2 vs 3");
  EXPECT_EQ(scenario_difference(even, pipelined({"parallel.microbatches=2"})), "parallel.microbatches: 1 vs 2");
  EXPECT_EQ(scenario_difference(even, pipelined({"parallel.schedule=gpipe"})).rfind("parallel.schedule:", 0), 0u);
  const Scenario sub8 = pipelined({"compression.boundary={\"method\":\"subspace\",\"rank\":8}"});
  EXPECT_EQ(scenario_difference(even, sub8).rfind("compression.boundary.method:", 0), 0u);
  EXPECT_EQ(scenario_difference(sub8, pipelined({"compression.boundary={\"method\":\"subspace\",\"rank\":9}"})),
            "compression.boundary.rank: 8 vs 9");
}

}  // namespace
}  // namespace lowband::parallel::test
