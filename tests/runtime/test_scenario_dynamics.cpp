// network.dynamics: each trace kind parses into the TraceSpec sim/dynamics.h
// describes, each bad entry is an InputError naming its JSON path (and a trace
// file's line), and to_json then parse gives the same scenario back.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/error.h"
#include "runtime/scenario/equal.h"
#include "runtime/scenario/load.h"
#include "tests/temp_dir.h"

namespace lowband {
namespace {

using nlohmann::json;
using sim::DynamicQuantity;
using sim::DynamicTarget;
using sim::TraceSpec;

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

// The quickstart (star, 4 nodes, model ideal) with `dynamics`, on `network` when given.
json with_dynamics(const json& dynamics, const json& network = nullptr) {
  json d = json::parse(builtin_scenario_text("default"));
  if (!network.is_null()) d["network"] = network;
  d["network"]["dynamics"] = dynamics;
  return d;
}

const json kMesh = {{"model", "ideal"}, {"topology", "full_mesh"}, {"nodes", 4}, {"bandwidth", "1Gbps"},
                    {"latency", "1ms"}};
const json kClusters = {{"model", "ideal"},
                        {"topology", "clusters"},
                        {"clusters", {{{"nodes", 2}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}},
                                      {{"nodes", 2}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}},
                                      {{"nodes", 1}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}}}},
                        {"wan", {{"bandwidth", "100Mbps"}, {"latency", "10ms"}}}};
const json kExplicit = {{"model", "ideal"},
                        {"topology", "explicit"},
                        {"nodes", 4},
                        {"links",
                         {{{"between", {0, 1}}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}},
                          {{"between", {1, 2}}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}},
                          {{"between", {2, 3}}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}}}}};

std::string error_of(const json& doc, const std::string& source = "test.json") {
  try {
    parse_scenario(doc, source);
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
    return e.what();
  }
  ADD_FAILURE() << "no error for " << doc["network"].dump();
  return "";
}

// parse(to_json(s)) == s, and its dynamics are the same specs.
void expect_round_trip(const Scenario& s) {
  const Scenario back = parse_scenario(to_json(s), "resolved");
  EXPECT_EQ(scenario_difference(back, s), "");
  ASSERT_EQ(back.network.dynamics.size(), s.network.dynamics.size());
  for (size_t i = 0; i < s.network.dynamics.size(); ++i) {
    const auto &a = back.network.dynamics[i], &b = s.network.dynamics[i];
    EXPECT_EQ(a.quantity, b.quantity);
    EXPECT_EQ(a.target.kind, b.target.kind);
    EXPECT_EQ(a.target.a, b.target.a);
    EXPECT_EQ(a.target.b, b.target.b);
    EXPECT_EQ(a.trace.kind, b.trace.kind);
    ASSERT_EQ(a.trace.points.size(), b.trace.points.size());
    for (size_t k = 0; k < a.trace.points.size(); ++k) {
      EXPECT_EQ(a.trace.points[k].seconds, b.trace.points[k].seconds);
      EXPECT_EQ(a.trace.points[k].value, b.trace.points[k].value);
    }
    EXPECT_EQ(a.trace.seed, b.trace.seed);
  }
}

TEST(ScenarioDynamics, EveryTraceKindParsesIntoItsSpec) {
  const json dynamics = json::parse(R"([
    {"bandwidth": {"steps": [["0s", 1], ["90min", 0.25], [7200, 2], ["24h", 1]]}},
    {"node": 2, "speed": {"daily": {"low": 0.5}}},
    {"node": 1, "latency": {"daily": {"low": 0.2, "low_at": "3h", "period": "12h", "sample": 60}}},
    {"bandwidth": {"random_walk": {"seed": 7, "every": "30s", "sigma": 0.1, "min": 0.5, "max": 1.5}}},
    {"node": 3, "state": {"outages": {"seed": 18446744073709551615, "mean_up": "2h", "mean_down": "10min"}}},
    {"speed": {"outages": {"seed": 0, "value": 0.5}}},
    {"node": 0, "bandwidth": {"random_walk": {"seed": 1, "sigma": 0.2, "min": 0.5}}}
  ])");
  const Scenario s = parse_scenario(with_dynamics(dynamics), "test.json");
  const auto& d = s.network.dynamics;
  ASSERT_EQ(d.size(), 7u);

  EXPECT_EQ(d[0].quantity, DynamicQuantity::bandwidth);
  EXPECT_EQ(d[0].target.kind, DynamicTarget::Kind::all);
  EXPECT_EQ(d[0].trace.kind, TraceSpec::Kind::points);
  ASSERT_EQ(d[0].trace.points.size(), 4u);
  EXPECT_EQ(d[0].trace.points[1].seconds, 5400);
  EXPECT_EQ(d[0].trace.points[1].value, 0.25);
  EXPECT_EQ(d[0].trace.points[2].seconds, 7200);
  EXPECT_EQ(d[0].trace.points[3].seconds, 86400);

  EXPECT_EQ(d[1].quantity, DynamicQuantity::speed);
  EXPECT_EQ(d[1].target.kind, DynamicTarget::Kind::node);
  EXPECT_EQ(d[1].target.a, 2);
  EXPECT_EQ(d[1].trace.kind, TraceSpec::Kind::daily);
  EXPECT_EQ(d[1].trace.low, 0.5);
  EXPECT_EQ(d[1].trace.low_at_s, 72000);  // the defaults of sim/dynamics.h
  EXPECT_EQ(d[1].trace.period_s, 86400);
  EXPECT_EQ(d[1].trace.sample_s, 600);

  EXPECT_EQ(d[2].quantity, DynamicQuantity::latency);
  EXPECT_EQ(d[2].trace.low_at_s, 10800);
  EXPECT_EQ(d[2].trace.period_s, 43200);
  EXPECT_EQ(d[2].trace.sample_s, 60);

  EXPECT_EQ(d[3].trace.kind, TraceSpec::Kind::random_walk);
  EXPECT_EQ(d[3].trace.seed, 7u);
  EXPECT_EQ(d[3].trace.every_s, 30);
  EXPECT_EQ(d[3].trace.sigma, 0.1);
  EXPECT_EQ(d[3].trace.min, 0.5);
  EXPECT_EQ(d[3].trace.max, 1.5);

  EXPECT_EQ(d[4].quantity, DynamicQuantity::state);
  EXPECT_EQ(d[4].target.a, 3);
  EXPECT_EQ(d[4].trace.kind, TraceSpec::Kind::outages);
  EXPECT_EQ(d[4].trace.seed, UINT64_MAX);
  EXPECT_EQ(d[4].trace.mean_up_s, 7200);
  EXPECT_EQ(d[4].trace.mean_down_s, 600);
  EXPECT_EQ(d[4].trace.value, 0);

  EXPECT_EQ(d[5].trace.value, 0.5);
  EXPECT_EQ(d[5].trace.mean_up_s, 3600);  // defaults
  EXPECT_EQ(d[6].trace.every_s, 60);
  EXPECT_EQ(d[6].trace.sigma, 0.2);
  EXPECT_EQ(d[6].trace.min, 0.5);
  EXPECT_EQ(d[6].trace.max, 1);  // the default
  expect_round_trip(s);
}

TEST(ScenarioDynamics, AnEmptyListIsAConstantNetwork) {
  const Scenario s = parse_scenario(with_dynamics(json::array()), "test.json");
  EXPECT_TRUE(s.network.dynamics.empty());
  EXPECT_EQ(scenario_difference(s, builtin_scenario("default")), "");
}

TEST(ScenarioDynamics, TargetsFollowTheTopology) {
  const json state = json::parse(R"({"steps": [["1h", 0], ["2h", 1]]})");
  // full_mesh: a node pair, sorted.
  Scenario s = parse_scenario(with_dynamics({{{"between", {3, 1}}, {"state", state}}}, kMesh), "test.json");
  EXPECT_EQ(s.network.dynamics[0].target.kind, DynamicTarget::Kind::between);
  EXPECT_EQ(s.network.dynamics[0].target.a, 1);
  EXPECT_EQ(s.network.dynamics[0].target.b, 3);
  expect_round_trip(s);
  // clusters: a cluster pair's WAN link (3 clusters, 5 nodes).
  s = parse_scenario(with_dynamics({{{"between", {2, 0}}, {"bandwidth", {{"daily", {{"low", 0.3}}}}}}}, kClusters),
                     "test.json");
  EXPECT_EQ(s.network.dynamics[0].target.a, 0);
  EXPECT_EQ(s.network.dynamics[0].target.b, 2);
  expect_round_trip(s);
  EXPECT_CONTAINS(error_of(with_dynamics({{{"between", {0, 3}}, {"state", state}}}, kClusters)),
                  "network.dynamics.0.between.1: cluster 3 is out of range: the network has 3 clusters");
  // explicit: a listed link only.
  s = parse_scenario(with_dynamics({{{"between", {2, 1}}, {"state", state}}}, kExplicit), "test.json");
  EXPECT_EQ(s.network.dynamics[0].target.a, 1);
  expect_round_trip(s);
  EXPECT_CONTAINS(error_of(with_dynamics({{{"between", {0, 3}}, {"state", state}}}, kExplicit)),
                  "network.dynamics.0.between: nodes 0 and 3 have no link between them");
  // star: no pair links.
  EXPECT_CONTAINS(error_of(with_dynamics({{{"between", {0, 1}}, {"state", state}}})),
                  "network.dynamics.0.between: a star has no link between two nodes");
  // Node indices against network.nodes; pairs of two distinct nodes.
  EXPECT_CONTAINS(error_of(with_dynamics({{{"node", 4}, {"state", state}}})),
                  "network.dynamics.0.node: node 4 is out of range: the network has 4 nodes (0..3)");
  EXPECT_CONTAINS(error_of(with_dynamics({{{"node", "1"}, {"state", state}}})), "network.dynamics.0.node: expected a node index");
  EXPECT_CONTAINS(error_of(with_dynamics({{{"between", {2, 2}}, {"state", state}}}, kMesh)),
                  "network.dynamics.0.between: a link joins two different nodes");
  EXPECT_CONTAINS(error_of(with_dynamics({{{"between", {1, 2, 3}}, {"state", state}}}, kMesh)),
                  "network.dynamics.0.between: expected two node indices");
  EXPECT_CONTAINS(error_of(with_dynamics({{{"node", 1}, {"between", {1, 2}}, {"state", state}}}, kMesh)),
                  "network.dynamics.0.between: give \"node\" or \"between\", not both");
}

TEST(ScenarioDynamics, QuantitiesAreOneAnEntryAndWhereTheyApply) {
  const json walk = {{"random_walk", {{"seed", 1}, {"sigma", 0.1}, {"min", 0.5}}}};
  EXPECT_CONTAINS(error_of(with_dynamics({{{"node", 1}}})),
                  "network.dynamics.0: expected the quantity the trace changes: one of \"bandwidth\", \"latency\", "
                  "\"state\" or \"speed\"");
  EXPECT_CONTAINS(error_of(with_dynamics({{{"bandwidth", walk}, {"speed", walk}}})),
                  "network.dynamics.0.speed: one quantity an entry");
  EXPECT_CONTAINS(error_of(with_dynamics({{{"between", {0, 1}}, {"speed", walk}}}, kMesh)),
                  "network.dynamics.0.speed: a link has no compute speed");
  EXPECT_CONTAINS(error_of(with_dynamics({{{"bandwith", walk}}})),
                  "unknown key \"bandwith\" at network.dynamics.0 (did you mean \"bandwidth\"?)");
  EXPECT_CONTAINS(error_of(with_dynamics(json::object())), "network.dynamics: expected an array");
  EXPECT_CONTAINS(error_of(with_dynamics({1})), "network.dynamics.0: expected an object");
  // Latency traces: model ideal, no simgrid settings (the replay pays latency itself only there).
  json tcp = kMesh;
  tcp["model"] = "tcp";
  EXPECT_CONTAINS(error_of(with_dynamics({{{"latency", walk}}}, tcp)),
                  "network.dynamics.0.latency: a latency trace needs network.model \"ideal\"");
  json simgrid = kMesh;
  simgrid["simgrid"] = {{"network/optim", "Full"}};
  EXPECT_CONTAINS(error_of(with_dynamics({{{"latency", walk}}}, simgrid)),
                  "network.dynamics.0.latency: a latency trace needs no network.simgrid settings");
  // Bandwidth traces are fine with either.
  EXPECT_NO_THROW(parse_scenario(with_dynamics({{{"bandwidth", walk}}}, tcp), "test.json"));
  EXPECT_NO_THROW(parse_scenario(with_dynamics({{{"bandwidth", walk}}}, simgrid), "test.json"));
}

TEST(ScenarioDynamics, TracesAreOneOfTheKindsWithTheirRanges) {
  const auto bw = [](const json& trace) { return with_dynamics({{{"bandwidth", trace}}}); };
  const auto state = [](const json& trace) { return with_dynamics({{{"node", 0}, {"state", trace}}}); };
  const std::string at = "network.dynamics.0.bandwidth";
  EXPECT_CONTAINS(error_of(bw(json::object())), at + ": expected a trace: one of \"steps\", \"file\", \"daily\"");
  EXPECT_CONTAINS(error_of(bw({{"steps", {{0, 1}}}, {"daily", {{"low", 0.5}}}})),
                  at + ".daily: one trace each: \"steps\" or \"daily\", not both");
  EXPECT_CONTAINS(error_of(bw({{"stpes", {{0, 1}}}})), "unknown key \"stpes\" at " + at);
  EXPECT_CONTAINS(error_of(bw(0.5)), at + ": expected an object");
  // steps
  EXPECT_CONTAINS(error_of(bw({{"steps", json::array()}})), at + ".steps: expected at least one [time, value] point");
  EXPECT_CONTAINS(error_of(bw(json::parse(R"({"steps": [["1h", 0.5], ["1h", 0.7]]})"))),
                  at + ".steps.1.0: times must increase strictly: 3600 s after 3600 s");
  EXPECT_CONTAINS(error_of(bw(json::parse(R"({"steps": [["-1s", 0.5]]})"))), at + ".steps.0.0: duration must not be negative");
  EXPECT_CONTAINS(error_of(bw({{"steps", {{-1, 0.5}}}})), at + ".steps.0.0: a duration must not be negative");
  EXPECT_CONTAINS(error_of(bw(json::parse(R"({"steps": [["2e9s", 0.5]]})"))), at + ".steps.0.0: \"2e9s\" is out of range");
  EXPECT_CONTAINS(error_of(bw({{"steps", {{1e10, 0.5}}}})), at + ".steps.0.0: 10000000000.0 is out of range");
  EXPECT_CONTAINS(error_of(bw(json::parse(R"({"steps": [["1m", 0.5]]})"))), at + ".steps.0.0: \"1m\" has unit \"m\"");
  EXPECT_CONTAINS(error_of(bw({{"steps", {{true, 0.5}}}})), at + ".steps.0.0: expected a duration");
  EXPECT_CONTAINS(error_of(bw({{"steps", {{0, "0.5"}}}})), at + ".steps.0.1: expected a number");
  EXPECT_CONTAINS(error_of(bw({{"steps", {{0, 0.5, 1}}}})), at + ".steps.0: expected [time, value]");
  EXPECT_CONTAINS(error_of(bw({{"steps", {0, 0.5}}})), at + ".steps.0: expected [time, value]");
  // values: factors in [1e-6, 1e6], 0 an outage of state; states 0 or 1
  EXPECT_CONTAINS(error_of(bw({{"steps", {{0, 0}}}})),
                  at + ".steps.0.1: a bandwidth factor of 0 is refused: use a \"state\" trace for an outage");
  EXPECT_CONTAINS(error_of(bw({{"steps", {{0, 2e6}}}})), at + ".steps.0.1: a bandwidth factor (of the nominal value) is in [1e-06, 1e+06], got 2e+06");
  EXPECT_CONTAINS(error_of(bw({{"steps", {{0, -0.5}}}})), "in [1e-06, 1e+06], got -0.5");
  EXPECT_NO_THROW(parse_scenario(bw({{"steps", {{0, 1e-6}, {1, 1e6}}}}), "test.json"));
  EXPECT_CONTAINS(error_of(state({{"steps", {{0, 0.5}}}})),
                  "network.dynamics.0.state.steps.0.1: a state is 0 (down) or 1 (up), got 0.5");
  // daily
  EXPECT_CONTAINS(error_of(bw({{"daily", json::object()}})), at + ".daily.low: required key \"low\" is missing");
  EXPECT_CONTAINS(error_of(bw({{"daily", {{"low", 0}}}})), at + ".daily.low: expected a number in (0, 1]");
  EXPECT_CONTAINS(error_of(bw({{"daily", {{"low", 1.5}}}})), at + ".daily.low: expected a number in (0, 1]");
  EXPECT_CONTAINS(error_of(bw({{"daily", {{"low", 1e-9}}}})), at + ".daily.low: a bandwidth factor");
  EXPECT_CONTAINS(error_of(bw({{"daily", {{"low", 0.5}, {"period", "0s"}}}})), at + ".daily.period: must be at least 1s");
  EXPECT_CONTAINS(error_of(bw({{"daily", {{"low", 0.5}, {"sample", 0}}}})), at + ".daily.sample: must be at least 1s");
  EXPECT_CONTAINS(error_of(bw({{"daily", {{"low", 0.5}, {"sample", "2h"}, {"period", "1h"}}}})),
                  at + ".daily.sample: a sample of 7200 s is longer than the period, 3600 s");
  EXPECT_CONTAINS(error_of(bw({{"daily", {{"low", 0.5}, {"low_at", "24h"}}}})),
                  at + ".daily.low_at: the time of the low, 86400 s, must be within the period");
  EXPECT_CONTAINS(error_of(bw({{"daily", {{"low", 0.5}, {"lowat", "2h"}}}})), "unknown key \"lowat\" at " + at + ".daily");
  EXPECT_CONTAINS(error_of(state({{"daily", {{"low", 0.5}}}})),
                  "network.dynamics.0.state.daily: a state is 0 or 1, which a daily trace does not give");
  // random_walk
  EXPECT_CONTAINS(error_of(bw({{"random_walk", json::object()}})), at + ".random_walk.seed: required key \"seed\" is missing");
  EXPECT_CONTAINS(error_of(bw({{"random_walk", {{"seed", -1}}}})), at + ".random_walk.seed: expected a non-negative integer");
  EXPECT_CONTAINS(error_of(bw({{"random_walk", {{"seed", 1.5}}}})), at + ".random_walk.seed: expected a non-negative integer");
  EXPECT_CONTAINS(error_of(bw({{"random_walk", {{"seed", 1}, {"every", "0s"}}}})), at + ".random_walk.every: must be at least 1s");
  // Nanosecond intervals would build a point per nanosecond of the run.
  EXPECT_CONTAINS(error_of(bw({{"daily", {{"low", 0.5}, {"sample", "1ns"}}}})), at + ".daily.sample: must be at least 1s");
  EXPECT_CONTAINS(error_of(bw({{"outages", {{"seed", 1}, {"value", 0.5}, {"mean_down", 0.5}}}})),
                  at + ".outages.mean_down: must be at least 1s");
  EXPECT_CONTAINS(error_of(bw({{"random_walk", {{"seed", 1}, {"sigma", 1.5}}}})), at + ".random_walk.sigma: expected a number in [0, 1]");
  EXPECT_CONTAINS(error_of(bw({{"random_walk", {{"seed", 1}, {"min", 0}}}})), at + ".random_walk.min: expected a number in (0, 1]");
  EXPECT_CONTAINS(error_of(bw({{"random_walk", {{"seed", 1}, {"max", 0.5}}}})), at + ".random_walk.max: expected a number >= 1");
  EXPECT_CONTAINS(error_of(bw({{"random_walk", {{"seed", 1}, {"max", 1e7}}}})), at + ".random_walk.max: a bandwidth factor");
  EXPECT_CONTAINS(error_of(state({{"random_walk", {{"seed", 1}}}})), "a random_walk trace does not give");
  // A walk that cannot move (the defaults: sigma 0, min = max = 1) would be a constant.
  EXPECT_CONTAINS(error_of(bw({{"random_walk", {{"seed", 1}, {"min", 0.5}}}})),
                  at + ".random_walk: a random walk of sigma 0 never moves");
  EXPECT_CONTAINS(error_of(bw({{"random_walk", {{"seed", 1}, {"sigma", 0}, {"min", 0.5}}}})),
                  at + ".random_walk.sigma: a random walk of sigma 0 never moves");
  EXPECT_CONTAINS(error_of(bw({{"random_walk", {{"seed", 1}, {"sigma", 0.1}}}})),
                  at + ".random_walk: min and max are both 1: the walk is clamped to a constant");
  // outages
  EXPECT_CONTAINS(error_of(bw({{"outages", {{"seed", 1}}}})),
                  at + ".outages.value: a bandwidth factor of 0 is refused: use a \"state\" trace for an outage");
  EXPECT_CONTAINS(error_of(bw({{"outages", {{"seed", 1}, {"value", 0}}}})), at + ".outages.value: a bandwidth factor of 0");
  EXPECT_CONTAINS(error_of(bw({{"outages", {{"seed", 1}, {"value", 0.1}, {"mean_up", "0s"}}}})),
                  at + ".outages.mean_up: must be at least 1s");
  EXPECT_CONTAINS(error_of(bw({{"outages", {{"seed", 1}, {"value", 0.1}, {"mean_down", 0}}}})),
                  at + ".outages.mean_down: must be at least 1s");
  EXPECT_CONTAINS(error_of(bw({{"outages", {{"value", 0.1}}}})), at + ".outages.seed: required key \"seed\" is missing");
  EXPECT_CONTAINS(error_of(state({{"outages", {{"seed", 1}, {"value", 1}}}})),
                  "network.dynamics.0.state.outages.value: a state trace's outages are 0 (down)");
  EXPECT_NO_THROW(parse_scenario(state({{"outages", {{"seed", 1}, {"value", 0}}}}), "test.json"));
}

TEST(ScenarioDynamics, DurationsTakeHoursAndMinutesButAreWrittenInSeconds) {
  const Scenario s = parse_scenario(
      with_dynamics(json::parse(R"([{"bandwidth": {"steps": [["1.5h", 0.5], ["100min", 1]]}}])")), "test.json");
  EXPECT_EQ(s.network.dynamics[0].trace.points[0].seconds, 5400);
  EXPECT_EQ(s.network.dynamics[0].trace.points[1].seconds, 6000);
  const json written = to_json(s)["network"]["dynamics"];
  EXPECT_EQ(written, json::parse(R"([{"bandwidth": {"steps": [["5400s", 0.5], ["6000s", 1.0]]}}])")) << written.dump();
}

class ScenarioDynamicsFiles : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test_support::unique_test_temp_dir("lowband_dynamics"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const auto p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  std::filesystem::path dir_;
};

TEST_F(ScenarioDynamicsFiles, AFilesPointsAreReadAndEchoedInline) {
  const std::string trace = write("trace.txt", "# seconds factor\n\n0 1\n  600\t0.5   # the evening\n3600 1e-1\n\n");
  const Scenario s = parse_scenario(with_dynamics({{{"node", 1}, {"bandwidth", {{"file", trace}}}}}), "test.json");
  const auto& t = s.network.dynamics[0].trace;
  EXPECT_EQ(t.kind, TraceSpec::Kind::points);
  ASSERT_EQ(t.points.size(), 3u);
  EXPECT_EQ(t.points[1].seconds, 600);
  EXPECT_EQ(t.points[1].value, 0.5);
  EXPECT_EQ(t.points[2].value, 0.1);
  // The resolved scenario holds the points, not the file: a run directory needs nothing beside it.
  const json written = to_json(s)["network"]["dynamics"][0];
  EXPECT_EQ(written, json::parse(R"({"node": 1, "bandwidth": {"steps": [["0s", 1.0], ["600s", 0.5], ["3600s", 0.1]]}})"))
      << written.dump();
  std::filesystem::remove(trace);
  expect_round_trip(s);
}

TEST_F(ScenarioDynamicsFiles, ARelativePathIsLookedForBesideTheScenarioFile) {
  write("trace.txt", "0 0\n60 1\n");
  json d = with_dynamics({{{"node", 2}, {"state", {{"file", "trace.txt"}}}}});
  const std::string scenario = write("scenario.json", d.dump(2));
  const Scenario s = load_scenario_file(scenario);
  ASSERT_EQ(s.network.dynamics[0].trace.points.size(), 2u);
  EXPECT_EQ(s.network.dynamics[0].trace.points[1].seconds, 60);
  // And through --set, placed by the file that the --set changes.
  const Scenario t = load_scenario_file(write("plain.json", json::parse(builtin_scenario_text("default")).dump()),
                                        {R"(network.dynamics=[{"state": {"file": "trace.txt"}}])"});
  EXPECT_EQ(t.network.dynamics[0].trace.points.size(), 2u);
  // A built-in has no directory: its relative paths are the working directory's.
  try {
    builtin_scenario("default", {R"(network.dynamics=[{"state": {"file": "no-such-trace.txt"}}])"});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_CONTAINS(std::string(e.what()), "network.dynamics.0.state.file: no such trace file \"no-such-trace.txt\"");
  }
}

TEST_F(ScenarioDynamicsFiles, BadFilesNameTheFileTheLineAndThePath) {
  const std::string at = "network.dynamics.0.bandwidth.file: ";
  const auto error_for = [&](const std::string& text) {
    const std::string p = write("trace.txt", text);
    return std::pair{p, error_of(with_dynamics({{{"bandwidth", {{"file", p}}}}}))};
  };
  for (const auto& [text, line, what] : std::vector<std::tuple<std::string, int, std::string>>{
           {"0 1\n\n# ok\n60\n", 4, "expected \"seconds value\" (two numbers), got \"60\""},
           {"0 1 2\n", 1, "expected \"seconds value\" (two numbers), got \"0 1 2\""},
           {"0 1\n1h 0.5\n", 2, "expected \"seconds value\""},
           {"0 1\n60 x\n", 2, "expected \"seconds value\""},
           {"0 nan\n", 1, "expected \"seconds value\""},
           {"0 1\n60 0.5\n60 0.7\n", 3, "times must increase strictly: 60 s after 60 s"},
           {"-1 1\n", 1, "time -1 is out of range"},
           {"2e9 1\n", 1, "time 2e9 is out of range"},
           {"0 1\n7 0\n", 2, "a bandwidth factor of 0 is refused: use a \"state\" trace for an outage"},
           {"0 1\n7 1e7\n", 2, "a bandwidth factor (of the nominal value) is in [1e-06, 1e+06]"}}) {
    const auto [p, e] = error_for(text);
    EXPECT_CONTAINS(e, "test.json: " + at + p + ":" + std::to_string(line) + ": " + what);
  }
  const auto [p, e] = error_for("# nothing\n\n");
  EXPECT_CONTAINS(e, at + p + ": holds no points");
  EXPECT_CONTAINS(error_of(with_dynamics({{{"bandwidth", {{"file", (dir_ / "absent.txt").string()}}}}})),
                  at + "no such trace file \"" + (dir_ / "absent.txt").string() + "\"");
  EXPECT_CONTAINS(error_of(with_dynamics({{{"bandwidth", {{"file", dir_.string()}}}}})), "is not a regular file");
  EXPECT_CONTAINS(error_of(with_dynamics({{{"bandwidth", {{"file", 3}}}}})), at.substr(0, at.size() - 2) + ": expected a string");
  // A state file's values are 0 or 1.
  const std::string states = write("states.txt", "0 1\n10 0.5\n");
  EXPECT_CONTAINS(error_of(with_dynamics({{{"state", {{"file", states}}}}})),
                  "network.dynamics.0.state.file: " + states + ":2: a state is 0 (down) or 1 (up), got 0.5");
  // At most 10000 points (the resolved scenario.json holds them inline).
  std::string many;
  for (int i = 0; i <= 10000; ++i) many += std::to_string(i) + " 1\n";
  EXPECT_CONTAINS(error_for(many).second, ":10001: more than 10000 points");
}

}  // namespace
}  // namespace lowband

namespace lowband {
namespace {

TEST(ScenarioMessageOrder, ParsesRoundTripsAndRefusesOthers) {
  EXPECT_EQ(builtin_scenario("default").network.message_order, sim::MessageOrder::concurrent);
  const Scenario fifo = builtin_scenario("default", {"network.message_order=fifo"});
  EXPECT_EQ(fifo.network.message_order, sim::MessageOrder::fifo);
  EXPECT_EQ(parse_scenario(to_json(fifo), "echo").network.message_order, sim::MessageOrder::fifo);
  try {
    builtin_scenario("default", {"network.message_order=lifo"});
    ADD_FAILURE() << "lifo accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "--set network.message_order=lifo");
    EXPECT_NE(std::string(e.what()).find("concurrent"), std::string::npos) << e.what();
  }
}

TEST(ScenarioRestart, ParsesRoundTripsAndNamesEachBadPart) {
  const json down = json::parse(R"([{"node": 1, "state": {"steps": [["10s", 0], ["20s", 1]]}}])");
  json d = with_dynamics(down);
  d["network"]["restart"] = {{"stall_timeout", "5min"}, {"relaunch", 30}};
  const Scenario s = parse_scenario(d, "test.json");
  ASSERT_TRUE(s.network.restart.has_value());
  EXPECT_EQ(s.network.restart->stall_timeout_seconds, 300);
  EXPECT_EQ(s.network.restart->relaunch_seconds, 30);
  const Scenario echoed = parse_scenario(to_json(s), "echo");
  ASSERT_TRUE(echoed.network.restart.has_value());
  EXPECT_EQ(echoed.network.restart->stall_timeout_seconds, 300);
  EXPECT_EQ(echoed.network.restart->relaunch_seconds, 30);
  EXPECT_FALSE(parse_scenario(with_dynamics(down), "test.json").network.restart.has_value());

  const std::vector<std::tuple<json, json, std::string>> bad = {
      {down, {{"stall_timeout", "5min"}}, "network.restart.relaunch: required key"},
      {down, {{"relaunch", "1min"}}, "network.restart.stall_timeout: required key"},
      {down, {{"stall_timeout", "0.5s"}, {"relaunch", 0}}, "network.restart.stall_timeout: must be at least 1s"},
      {down, {{"stall_timeout", "5min"}, {"relaunch", -1}}, "network.restart.relaunch: a duration must not be negative"},
      {down, {{"stall_timeout", "5min"}, {"relaunch", "2e9s"}}, "network.restart.relaunch: "},
      {down, {{"stall_timeout", "5min"}, {"relaunch", 0}, {"after", 3}}, "unknown key \"after\" at network.restart"},
      {down, "5min", "network.restart"},
      {json::parse(R"([{"bandwidth": {"steps": [["10s", 0.5]]}}])"), {{"stall_timeout", "5min"}, {"relaunch", 0}},
       "network.restart: has no effect without a \"state\" trace"},
  };
  for (const auto& [dynamics, restart, expected] : bad) {
    json doc = with_dynamics(dynamics);
    doc["network"]["restart"] = restart;
    EXPECT_CONTAINS(error_of(doc), expected);
  }
  json none = json::parse(builtin_scenario_text("default"));
  none["network"]["restart"] = {{"stall_timeout", "5min"}, {"relaunch", 0}};
  EXPECT_CONTAINS(error_of(none), "network.restart: has no effect without a \"state\" trace");
}

// An outage long against the watchdog would relaunch the run once per timeout, a
// replay each: the count is bounded when the scenario is read, before any work.
TEST(ScenarioRestart, AnOutageThatWouldRelaunchTooOftenIsRefusedWhenRead) {
  const auto doc = [](const std::string& down_trace, const std::string& stall, double relaunch) {
    json d = with_dynamics(json::parse("[{\"node\": 1, \"state\": " + down_trace + "}]"));
    d["network"]["restart"] = {{"stall_timeout", stall}, {"relaunch", relaunch}};
    return d;
  };
  // 99 999 s down with a 1 s watchdog: about 10^5 relaunches.
  const std::string long_down = R"({"steps": [["1s", 0], ["50s", 0], ["100000s", 1]]})";
  EXPECT_CONTAINS(error_of(doc(long_down, "1s", 0)),
                  "network.restart: an outage of 99999 s (network.dynamics.0) would relaunch the run about 99999 times");
  // The same outage with a watchdog and relaunch that make it 10 000 or fewer: accepted.
  EXPECT_TRUE(parse_scenario(doc(long_down, "5s", 5), "test.json").network.restart.has_value());
  // Generated outages: bounded by their mean.
  EXPECT_CONTAINS(error_of(doc(R"({"outages": {"seed": 1, "mean_up": "1h", "mean_down": "1e6s"}})", "10s", 0)),
                  "(network.dynamics.0, its mean_down) would relaunch the run about 100000 times");
  EXPECT_TRUE(parse_scenario(doc(R"({"outages": {"seed": 1, "mean_up": "1h", "mean_down": "10min"}})", "10s", 0),
                             "test.json").network.restart.has_value());
}

}  // namespace
}  // namespace lowband
