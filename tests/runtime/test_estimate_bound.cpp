// The physical bound beside every estimate (Estimate::bound, sim/bound.h): never
// above the replayed step in any shipped scenario that estimates quickly, tight
// enough that a bound with its bytes counted twice would be above it somewhere,
// and the MoS paper's case (issue 25): on a star of 300 Mbps access links, the
// compressed K/V and dK/dV of a step need over 14 s of one node's uplink.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "common/error.h"
#include "runtime/estimate/estimate.h"
#include "runtime/scenario/load.h"
#include "tests/shipped_scenarios.h"

#ifndef LOWBAND_SOURCE_DIR
#error "LOWBAND_SOURCE_DIR must name the repository root"
#endif

namespace lowband {
namespace {

namespace fs = std::filesystem;
const std::string kScenarios = std::string(LOWBAND_SOURCE_DIR) + "/scenarios";

// Scenarios whose estimate takes more than a few seconds on a 2-core machine.
const std::set<std::string> kSlow = {};

void expect_bound_below_step(const std::string& name, const Estimate& e) {
  const BoundSection& b = e.bound;
  SCOPED_TRACE(name);
  // The replay's own rounding (SimGrid's precision) is far below 1e-6 of a step.
  const double slack = 1 + 1e-6;
  EXPECT_LE(b.bound_seconds, e.step_seconds * slack);
  EXPECT_LE(b.busiest_link_seconds, e.step_seconds * slack);
  EXPECT_LE(b.latency_bound_seconds, e.step_seconds * slack);
  EXPECT_LE(b.compute_bound_seconds, e.step_seconds * slack);
  EXPECT_GE(b.compute_bound_seconds, e.compute_seconds * (1 - 1e-12));
  EXPECT_DOUBLE_EQ(b.bound_seconds,
                   std::max({b.busiest_link_seconds, b.latency_bound_seconds, b.compute_bound_seconds}));
  EXPECT_GE(b.step_over_bound, 1 / slack);
  EXPECT_DOUBLE_EQ(b.max_tokens_per_s, e.tokens_per_step / b.bound_seconds);
  if (b.busiest_link_bytes > 0) {
    EXPECT_DOUBLE_EQ(b.busiest_link_seconds, b.busiest_link_bytes / b.busiest_link_bandwidth_bytes_per_s);
  }
}

TEST(EstimateBound, NeverAboveTheStepInAnyShippedScenario) {
  int checked = 0, doubled_above = 0;
  for (const std::string& rel : test_support::shipped_scenarios()) {
    const fs::path p = fs::path(kScenarios) / rel;
    if (kSlow.count(rel)) continue;
    Scenario s;
    try {
      s = load_scenario_file(p.string(), {});
    } catch (const InputError&) {
      continue;  // a sweep file (a grid, not a scenario): its points are checked by the grid tests
    }
    const Estimate e = estimate(s);
    expect_bound_below_step(rel, e);
    ++checked;
    // The bound discriminates: with every byte counted twice it would be above the
    // step in some scenario (those where a link is busy most of the step).
    if (2 * e.bound.busiest_link_seconds > e.step_seconds) ++doubled_above;
  }
  EXPECT_GE(checked, 15);
  EXPECT_GE(doubled_above, 1);
}

TEST(EstimateBound, MosPaperOnAStarNeedsFourteenSecondsOfUplink) {
  // 743M parameters, 131,072 tokens over 8 context ranks, MoS K/V, 300 Mbps per
  // node: ≥ 528 MB of K/V + dK/dV over each node's uplink, ≥ 14.1 s per step, so
  // the paper's 55K tokens/s (2.4 s per step) cannot happen on this network.
  const Scenario s = load_scenario_file(kScenarios + "/mos-paper-mos-300mbps.json", {});
  const Estimate e = estimate(s);
  expect_bound_below_step("mos-paper-mos-300mbps", e);
  EXPECT_EQ(e.bound.bound_kind, "bandwidth");
  EXPECT_NE(e.bound.busiest_link.find("uplink"), std::string::npos);
  EXPECT_NEAR(e.bound.busiest_link_bandwidth_bytes_per_s, 300e6 / 8, 1);
  const std::map<std::string, double>& kinds = e.bound.busiest_link_bytes_by_kind;
  const double kv = kinds.at("kv") + kinds.at("dkv");
  EXPECT_GT(kv, 520e6);
  EXPECT_GT(kv / e.bound.busiest_link_bandwidth_bytes_per_s, 14.0);  // the K/V alone
  EXPECT_GE(e.bound.busiest_link_seconds, kv / e.bound.busiest_link_bandwidth_bytes_per_s);
  EXPECT_LT(e.bound.max_tokens_per_s, 55000.0 / 5);
}

TEST(EstimateBound, OneRankHasNoLinkAndIsBoundByCompute) {
  const Scenario s = builtin_scenario("default", {"parallel.context=1", "network.nodes=1"});
  const Estimate e = estimate(s);
  EXPECT_EQ(e.bound.bound_kind, "compute");
  EXPECT_EQ(e.bound.busiest_link, "");
  EXPECT_EQ(e.bound.busiest_link_seconds, 0);
  EXPECT_DOUBLE_EQ(e.bound.bound_seconds, e.free_network_step_seconds);
}

}  // namespace
}  // namespace lowband
