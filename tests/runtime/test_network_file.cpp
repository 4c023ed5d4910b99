// "network": "PATH": a scenario names a network file (scenarios/networks/), whose
// object is its network section; --set network.KEY applies on top, --set
// network=PATH swaps it. And the measured networks shipped there hold what their
// sources published (scenarios/networks/dtfm-aws-regions.csv).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "runtime/scenario/equal.h"
#include "runtime/scenario/load.h"
#include "tests/shipped_scenarios.h"
#include "tests/temp_dir.h"

namespace lowband {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kNetworks = test_support::scenarios_dir() + "/networks";

class ScenarioNetworkFile : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test_support::unique_test_temp_dir("network_file"); }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  // The default scenario with `network` as its network section.
  std::string scenario_with(const json& network, const std::string& name = "s.json") {
    json doc = json::parse(builtin_scenario_text("default"));
    doc["network"] = network;
    return write(name, doc.dump(2));
  }

  fs::path dir_;
};

const json kMesh = {{"source", "two sites measured by hand"}, {"model", "ideal"}, {"topology", "full_mesh"},
                    {"nodes", 4}, {"bandwidth", "200Mbps"}, {"latency", "30ms"}};

TEST_F(ScenarioNetworkFile, ANamedFileIsTheNetworkSectionItHolds) {
  write("nets/mesh.json", kMesh.dump(2));
  const Scenario named = load_scenario_file(scenario_with("nets/mesh.json"));  // beside the scenario file
  const Scenario inline_ = load_scenario_file(scenario_with(kMesh, "inline.json"));
  EXPECT_EQ(scenario_difference(named, inline_), "");
  EXPECT_EQ(named.network.topology, sim::Topology::full_mesh);
  EXPECT_DOUBLE_EQ(named.network.link.latency_s, 0.030);
  EXPECT_EQ(named.network.source, "two sites measured by hand");
  // Recorded with the section itself (a run directory stands alone), source included.
  EXPECT_EQ(to_json(named)["network"]["source"], "two sites measured by hand");
  EXPECT_EQ(scenario_difference(parse_scenario(to_json(named), "again"), named), "");
}

TEST_F(ScenarioNetworkFile, SetChangesTheFilesKeysOrNamesAnotherFile) {
  const std::string mesh = write("nets/mesh.json", kMesh.dump(2));
  const std::string path = scenario_with("nets/mesh.json");
  const Scenario tcp = load_scenario_file(path, {"network.model=tcp", "network.latency=5ms"});
  EXPECT_EQ(tcp.network.model, sim::NetworkModel::tcp);
  EXPECT_DOUBLE_EQ(tcp.network.link.latency_s, 0.005);
  EXPECT_EQ(tcp.network.topology, sim::Topology::full_mesh);
  // --set network=PATH: from the working directory (here absolute), on a file or a built-in.
  const Scenario swapped = builtin_scenario("default", {"network=" + mesh});
  EXPECT_EQ(swapped.network.topology, sim::Topology::full_mesh);
  EXPECT_EQ(swapped.network.nodes, 4);
  const Scenario home = builtin_scenario("default", {"network=" + kNetworks + "/us-home-broadband.json"});
  EXPECT_EQ(home.network.nodes, 8);
}

TEST_F(ScenarioNetworkFile, ErrorsNameTheScenarioTheSetOrTheNetworkFile) {
  const std::string missing = scenario_with("nets/none.json");
  try {
    load_scenario_file(missing);
    FAIL() << "a missing network file was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), missing);
    EXPECT_NE(std::string(e.what()).find("no such network file \"nets/none.json\""), std::string::npos) << e.what();
  }
  try {
    builtin_scenario("default", {"network=nowhere.json"});
    FAIL() << "a missing network file was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "--set network=nowhere.json");
  }
  const std::string broken = write("nets/broken.json", "{\n  \"model\": \"ideal\",\n  \"nodes\": 4,,\n}\n");
  try {
    load_scenario_file(scenario_with("nets/broken.json"));
    FAIL() << "a network file that is not JSON was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(broken + ":3:", 0), 0u) << "file:line:col, got: " << e.what();
  }
  write("nets/list.json", "[1, 2]");
  try {
    load_scenario_file(scenario_with("nets/list.json"));
    FAIL() << "a network file holding an array was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("network section, an object; got array"), std::string::npos) << e.what();
  }
  // A bad value inside the file is named by its JSON path, as inline.
  json slow = kMesh;
  slow["bandwidth"] = "0Mbps";
  write("nets/slow.json", slow.dump());
  try {
    load_scenario_file(scenario_with("nets/slow.json"));
    FAIL() << "a zero bandwidth was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("network.bandwidth"), std::string::npos) << e.what();
  }
}

// The CSV as published: region pair -> (delay ms, Gbit/s).
std::map<std::set<std::string>, std::pair<double, double>> dtfm_pairs() {
  std::ifstream in(kNetworks + "/dtfm-aws-regions.csv");
  std::map<std::set<std::string>, std::pair<double, double>> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("region_a", 0) == 0) continue;
    std::stringstream ss(line);
    std::string a, b, delay, gbps;
    std::getline(ss, a, ',');
    std::getline(ss, b, ',');
    std::getline(ss, delay, ',');
    std::getline(ss, gbps, ',');
    out[{a, b}] = {std::stod(delay), std::stod(gbps)};
  }
  return out;
}

// The regions a network file's source lists: "Nodes, in order: 0 Oregon, 1 Virginia, ...".
std::vector<std::string> regions_of(const std::string& source) {
  std::vector<std::string> regions;
  std::stringstream ss(source.substr(source.find("in order: ") + 10));
  for (std::string item; std::getline(ss, item, ',');) {
    std::stringstream words(item);
    int index = 0;
    std::string region;
    words >> index >> region;
    if (!region.empty() && region.back() == '.') region.pop_back();
    EXPECT_EQ(index, int(regions.size()));
    regions.push_back(region);
  }
  return regions;
}

TEST(MeasuredNetworks, EveryPairOfRegionsHasItsPublishedRateAndHalfItsRoundTrip) {
  const auto published = dtfm_pairs();
  ASSERT_EQ(published.size(), 45u);  // 10 regions
  for (const auto& [file, regions_expected] : std::map<std::string, size_t>{{"aws-8-regions.json", 8},
                                                                            {"aws-10-regions.json", 10}}) {
    SCOPED_TRACE(file);
    const Scenario s = builtin_scenario("default", {"network=" + kNetworks + "/" + file});
    const std::vector<std::string> regions = regions_of(s.network.source);
    ASSERT_EQ(regions.size(), regions_expected);
    ASSERT_EQ(s.network.nodes, int(regions_expected));
    EXPECT_EQ(s.network.topology, sim::Topology::explicit_links);
    ASSERT_EQ(s.network.pair_links.size(), regions_expected * (regions_expected - 1) / 2);  // every pair, once
    for (const sim::PairLink& l : s.network.pair_links) {
      const auto it = published.find({regions[size_t(l.a)], regions[size_t(l.b)]});
      ASSERT_NE(it, published.end()) << regions[size_t(l.a)] << "-" << regions[size_t(l.b)];
      EXPECT_NEAR(l.link.latency_s, it->second.first / 2 / 1e3, 1e-12);
      EXPECT_NEAR(l.link.bandwidth_bytes_per_s, it->second.second * 1.25e8, 1e-3);
      EXPECT_EQ(l.link.upload(), l.link.bandwidth_bytes_per_s) << "the same rate each way";
    }
  }
}

TEST(MeasuredNetworks, HomeBroadbandIsTheMedianAccessLink) {
  const Scenario s = builtin_scenario("default", {"network=" + kNetworks + "/us-home-broadband.json"});
  EXPECT_EQ(s.network.topology, sim::Topology::star);
  EXPECT_NEAR(s.network.link.bandwidth_bytes_per_s, 153.8e6 / 8, 1e-6);
  EXPECT_NEAR(s.network.link.upload(), 21.6e6 / 8, 1e-6);
  EXPECT_DOUBLE_EQ(s.network.link.latency_s, 0.007);
  EXPECT_NE(s.network.source.find("Ookla"), std::string::npos);
}

TEST(MeasuredNetworks, EachSaysWhereItsFiguresComeFrom) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(kNetworks)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    SCOPED_TRACE(entry.path().string());
    const Scenario s = builtin_scenario("default", {"network=" + entry.path().string()});
    EXPECT_GT(s.network.source.size(), 80u) << "a source, a date and how the figures became links";
  }
  EXPECT_GE(files, 3);
}

}  // namespace
}  // namespace lowband
