// lowband sweep's grid (runtime/scenario/grid.h): axes from --set lists and from a
// "sweep" section, the cartesian product in axis order, point names, errors that
// name the flag or sweep path and the point, grouping by numerics; and how many
// trainings run at once.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "runtime/scenario/equal.h"
#include "runtime/scenario/load.h"
#include "runtime/scenario/grid.h"
#include "runtime/sweep/runner.h"
#include "tests/slurp.h"

namespace lowband::grid {
namespace {

using nlohmann::json;
using test_support::slurp;

const std::vector<std::string> kTiny = {"model.layers=2",     "model.d_model=32",   "model.heads=4",
                                        "model.kv_heads=2",   "model.ffn_hidden=64", "model.seq_len=64",
                                        "parallel.context=2", "network.nodes=2"};

std::vector<std::string> tiny(std::vector<std::string> extra) {
  std::vector<std::string> sets = kTiny;
  sets.insert(sets.end(), extra.begin(), extra.end());
  return sets;
}

SweepPlan plan_of(const std::vector<std::string>& sets, const std::string& text = builtin_scenario_text("default")) {
  return plan_sweep(make_spec(text, "test.json", sets));
}

std::string error_of(const std::vector<std::string>& sets, const std::string& text = builtin_scenario_text("default")) {
  try {
    plan_of(sets, text);
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(SweepGrid, SplitsOnlyAtTopLevelCommas) {
  EXPECT_EQ(split_top_level("80Mbps,300Mbps"), (std::vector<std::string>{"80Mbps", "300Mbps"}));
  EXPECT_EQ(split_top_level("[0,1]"), (std::vector<std::string>{"[0,1]"}));
  EXPECT_EQ(split_top_level("[0,1],[1,[2,3]]"), (std::vector<std::string>{"[0,1]", "[1,[2,3]]"}));
  EXPECT_EQ(split_top_level("{\"a\":1,\"b\":2}"), (std::vector<std::string>{"{\"a\":1,\"b\":2}"}));
  EXPECT_EQ(split_top_level("\"a,\\\"b\",c"), (std::vector<std::string>{"\"a,\\\"b\"", "c"}));
  EXPECT_EQ(parse_set_value("0.965"), json(0.965));
  EXPECT_EQ(parse_set_value("300Mbps"), json("300Mbps"));
}

TEST(SweepGrid, CartesianProductInAxisOrderWithReadableNames) {
  const SweepPlan plan =
      plan_of(tiny({"compression.method=mos", "network.bandwidth=80Mbps,1Gbps", "compression.ratio=0,0.965"}));
  ASSERT_EQ(plan.points.size(), 4u);
  const std::vector<std::string> names = {"quickstart-bw80Mbps-r0", "quickstart-bw80Mbps-r0.965",
                                          "quickstart-bw1Gbps-r0", "quickstart-bw1Gbps-r0.965"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(plan.points[i].name, names[i]);
    EXPECT_EQ(plan.points[i].scenario.name, names[i]);
  }
  EXPECT_EQ(plan.points[1].settings[0], (std::pair<std::string, json>{"network.bandwidth", "80Mbps"}));
  EXPECT_EQ(plan.points[1].settings[1], (std::pair<std::string, json>{"compression.ratio", 0.965}));
  EXPECT_EQ(plan.points[2].scenario.network.link.bandwidth_bytes_per_s, 1e9 / 8);
  EXPECT_EQ(plan.points[0].scenario.compression.method, CompressionMethod::none);  // ratio 0
  EXPECT_EQ(plan.points[3].scenario.compression.k_ratio, 0.965);
  EXPECT_EQ(plan.points[3].scenario.model.layers, 2);  // the plain --sets apply to every point
}

TEST(SweepGrid, PointsThatDifferOnlyInNetworkTrainOnce) {
  const SweepPlan plan =
      plan_of(tiny({"compression.method=mos", "network.bandwidth=80Mbps,1Gbps", "compression.ratio=0,0.965"}));
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_EQ(plan.groups[0], (std::vector<size_t>{0, 2}));  // ratio 0 on both networks
  EXPECT_EQ(plan.groups[1], (std::vector<size_t>{1, 3}));
  // A latency axis as well: still one training per ratio.
  EXPECT_EQ(plan_of(tiny({"compression.method=mos", "network.latency=1ms,10ms", "compression.ratio=0,0.5,0.9"}))
                .groups.size(),
            3u);
  // Anything that changes the numerics (the seed) is its own training.
  EXPECT_EQ(plan_of(tiny({"network.bandwidth=80Mbps,1Gbps", "training.seed=1,2"})).groups.size(), 2u);
  EXPECT_EQ(plan_of(tiny({"training.seed=1,2,3"})).groups.size(), 3u);
  // Projected timing only times a run: one training for two projections.
  EXPECT_EQ(plan_of(tiny({"projection.scenario=mos-paper-centralized-100gbps,mos-paper-decentralized-300mbps"}))
                .groups.size(),
            1u);
}

TEST(SweepGrid, CommasInsideBracketsStayOneValue) {
  // A plain override whose value holds commas inside [] and {}: not an axis.
  const SweepPlan one = plan_of(tiny({"devices.overrides=[{\"node\":1,\"profile\":\"L4\"}]"}));
  ASSERT_EQ(one.points.size(), 1u);
  EXPECT_EQ(one.points[0].name, "quickstart");
  EXPECT_EQ(one.points[0].scenario.devices.for_node(1).name, "L4");
  // Two such values at the top level: an axis of two arrays, and two trainings (devices differ).
  const SweepPlan two = plan_of(tiny({"devices.overrides=[],[{\"node\":1,\"profile\":\"L4\"}]"}));
  ASSERT_EQ(two.points.size(), 2u);
  EXPECT_EQ(two.points[1].scenario.devices.for_node(1).name, "L4");
  EXPECT_EQ(two.groups.size(), 2u);
  EXPECT_NE(two.points[0].name, two.points[1].name);
}

TEST(SweepGrid, BadValueNamesTheFlagAndThePoint) {
  const std::string e =
      error_of(tiny({"compression.method=mos", "network.bandwidth=80Mbps,1Gbps", "compression.ratio=0,1.5"}));
  EXPECT_CONTAINS(e, "--set compression.ratio=0,1.5 at point quickstart-bw80Mbps-r1.5 "
                     "(network.bandwidth=80Mbps, compression.ratio=1.5): compression.ratio: expected a number in [0, 1)");
  EXPECT_CONTAINS(error_of(tiny({"network.bandwidth=80Mbps,0Mbps"})), "--set network.bandwidth=80Mbps,0Mbps at point");
  EXPECT_CONTAINS(error_of(tiny({"compression.method=mos", "compression.ratio=0,,0.5"})),
                  "--set compression.ratio=0,,0.5: empty value");
  EXPECT_CONTAINS(error_of(tiny({"name=a,b"})), "--set name=a,b: the name cannot be swept");
  // A plain --set that is wrong names itself (and the point where it was found).
  EXPECT_CONTAINS(error_of(tiny({"compression.method=mos", "training.steps=0", "compression.ratio=0,0.5"})),
                  "--set training.steps=0 at point");
}

TEST(SweepGrid, AMethodAxisDropsTheFilesKeysForOtherMethods) {
  // The MoS paper's file sets k_ratio, v_ratio and warmup_steps (mos only): at
  // method "none" they are left out, as a file written for that point would.
  const std::string text = slurp(std::string(LOWBAND_SOURCE_DIR) + "/scenarios/mos-paper-mos-300mbps.json");
  const SweepPlan plan = plan_of({"compression.method=none,mos"}, text);
  ASSERT_EQ(plan.points.size(), 2u);
  EXPECT_EQ(plan.points[0].scenario.compression.method, CompressionMethod::none);
  EXPECT_EQ(plan.points[1].scenario.compression.method, CompressionMethod::mos);
  EXPECT_DOUBLE_EQ(plan.points[1].scenario.compression.k_ratio, 0.98);
  // The other keys stay (the sparse weight sync applies to every method).
  EXPECT_EQ(plan.points[0].scenario.compression.weight_sync, WeightSync::sparse);
  // The mos point is the file itself.
  const Scenario file = load_scenario_file(std::string(LOWBAND_SOURCE_DIR) + "/scenarios/mos-paper-mos-300mbps.json", {});
  EXPECT_EQ(training_key(plan.points[1].scenario), training_key(file));
  // A key a --set gives is kept, and refused where it does not apply.
  EXPECT_CONTAINS(error_of({"compression.method=none,mos", "compression.k_ratio=0.9"}, text),
                  "compression.k_ratio: only used with method \"mos\"");
}

// The default scenario's file text with a "sweep" section (given as text: key order matters).
std::string with_section(const std::string& section) {
  const std::string text = builtin_scenario_text("default");
  return text.substr(0, text.rfind('}')) + ",\n  \"sweep\": " + section + "\n}\n";
}

TEST(SweepGrid, SweepSectionGivesAxesInFileOrder) {
  // "network.bandwidth" sorts first; the file lists compression.ratio first, and the file wins.
  const std::string ordered = with_section(R"({"compression.ratio": [0, 0.9], "network.bandwidth": ["80Mbps", "1Gbps"]})");
  const SweepPlan plan = plan_of(tiny({"compression.method=mos"}), ordered);
  ASSERT_EQ(plan.spec.axes.size(), 2u);
  EXPECT_EQ(plan.spec.axes[0].key, "compression.ratio");
  EXPECT_EQ(plan.points[1].name, "quickstart-r0-bw1Gbps");
  EXPECT_EQ(plan.groups.size(), 2u);
  // Its errors name the file and the sweep path, and the point.
  EXPECT_CONTAINS(error_of(kTiny, with_section(R"({"network.bandwidth": ["80Mbps", "-1Mbps"]})")),
                  "test.json: sweep.network.bandwidth at point quickstart-bw-1Mbps");
  EXPECT_CONTAINS(error_of(kTiny, with_section(R"({"network.bandwidth": "80Mbps"})")),
                  "test.json: sweep.network.bandwidth: expected a non-empty array");
  // A --set list replaces the section's axis; a plain --set fixes it.
  EXPECT_EQ(plan_of(tiny({"compression.method=mos", "network.bandwidth=1Gbps,2Gbps,3Gbps"}), ordered).points.size(), 6u);
  const SweepPlan fixed = plan_of(tiny({"compression.method=mos", "network.bandwidth=5Gbps"}), ordered);
  ASSERT_EQ(fixed.points.size(), 2u);
  EXPECT_EQ(fixed.points[0].scenario.network.link.bandwidth_bytes_per_s, 5e9 / 8);
}

TEST(SweepGrid, SweepDocumentGivesBackThePlan) {
  const SweepPlan plan =
      plan_of(tiny({"compression.method=mos", "compression.ratio=0.9,0", "network.bandwidth=80Mbps,1Gbps"}));
  const SweepPlan again = plan_sweep(make_spec(sweep_document(plan.spec).dump(2), "sweep.json", {}));
  ASSERT_EQ(again.points.size(), plan.points.size());
  for (size_t i = 0; i < plan.points.size(); ++i) {
    EXPECT_EQ(again.points[i].name, plan.points[i].name);
    EXPECT_EQ(scenario_difference(again.points[i].scenario, plan.points[i].scenario), "");
  }
  EXPECT_EQ(again.groups, plan.groups);
}

// Each replica's fields are numerics: an axis over one trains each value.
TEST(SweepGrid, ReplicaFieldsAreTrainingsOfTheirOwn) {
  const std::string hetero = slurp(std::string(LOWBAND_SOURCE_DIR) + "/scenarios/hetero-selective.json");
  EXPECT_EQ(plan_of({"parallel.replicas.2.compress_boundaries=true,false"}, hetero).groups.size(), 2u);
  // The same nodes in replicas of other shapes: 1, 1, 2, 2 stages or 1, 2, 1, 2.
  EXPECT_EQ(plan_of({R"(parallel.replicas=[{"nodes":[0]},{"nodes":[1]},{"pipeline":2,"nodes":[2,3]},{"pipeline":2,"nodes":[4,5]}],)"
                     R"([{"nodes":[0]},{"pipeline":2,"nodes":[1,2]},{"nodes":[3]},{"pipeline":2,"nodes":[4,5]}])"},
                    hetero)
                .groups.size(),
            2u);
}

// Grouping by a key gives the groups the pairwise rule gave: points whose
// scenarios differ only in name, description, network and projection.
TEST(SweepGrid, GroupsAsThePairwiseRule) {
  const SweepPlan plan = plan_of(tiny({"compression.method=mos", "network.bandwidth=80Mbps,1Gbps",
                                       "compression.ratio=0,0.5,0.9", "training.seed=1,2", "network.latency=1ms,5ms",
                                       "parallel.split=zigzag,contiguous"}));
  const auto alike = [](const Scenario& a, Scenario b) {
    b.name = a.name, b.description = a.description, b.network = a.network, b.projection = a.projection;
    return scenario_difference(a, b).empty();
  };
  std::vector<std::vector<size_t>> pairwise;
  for (size_t i = 0; i < plan.points.size(); ++i) {
    auto g = std::find_if(pairwise.begin(), pairwise.end(), [&](const std::vector<size_t>& group) {
      return alike(plan.points[group.front()].scenario, plan.points[i].scenario);
    });
    if (g == pairwise.end()) pairwise.push_back({i});
    else g->push_back(i);
  }
  EXPECT_EQ(plan.groups, pairwise);
  EXPECT_EQ(plan.groups.size(), 12u);  // 3 ratios x 2 seeds x 2 splits
}

TEST(SweepParallelism, JobsTimesThreadsFitTheCores) {
  const auto p = [](int jobs, int threads, int trainings, int cores) {
    const sweep::Parallelism r = sweep::choose_parallelism(jobs, threads, trainings, cores);
    return std::make_pair(r.jobs, r.threads);
  };
  EXPECT_EQ(p(0, 0, 4, 2), std::make_pair(2, 1));    // one job per core
  EXPECT_EQ(p(0, 0, 1, 16), std::make_pair(1, 16));  // one training gets every core
  EXPECT_EQ(p(0, 0, 3, 16), std::make_pair(3, 5));
  EXPECT_EQ(p(0, 4, 10, 16), std::make_pair(4, 4));  // OMP_NUM_THREADS=4 or --threads 4
  EXPECT_EQ(p(0, 32, 10, 16), std::make_pair(1, 32));
  EXPECT_EQ(p(2, 0, 10, 16), std::make_pair(2, 8));  // --jobs 2
  EXPECT_EQ(p(8, 0, 3, 16), std::make_pair(3, 5));   // never more jobs than trainings
}

}  // namespace
}  // namespace lowband::grid
