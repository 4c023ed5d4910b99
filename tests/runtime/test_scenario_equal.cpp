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

}  // namespace
}  // namespace lowband::parallel::test
