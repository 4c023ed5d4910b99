// `lowband estimate` over a grid (issue 25): `--set KEY=V1,V2,...` and the file's
// "sweep" section give one row per point, each the single-point estimate of its
// settings; --csv, --json, --plot; bad input is one line naming the flag, exit 2,
// nothing written. And the physical bound beside a single estimate.
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_support.h"

namespace lowband {
namespace {

using test_support::Cli;
using test_support::CommandResult;
using nlohmann::json;
using test_support::slurp;

// The built-in default scenario, small and quick to estimate.
const std::string kBase = "estimate --builtin default ";

json estimate_json(Cli& cli, CommandResult r) {
  (void)cli;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

TEST_F(Cli, EstimateGridHasOnePointPerCombinationEqualToItsSingleEstimate) {
  const CommandResult r =
      run(kBase + "--set network.bandwidth=80Mbps,1Gbps --set parallel.exchange=ring,all_gather --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json grid = json::parse(r.out);
  EXPECT_EQ(grid.at("axes"), json({"network.bandwidth", "parallel.exchange"}));
  const json& points = grid.at("points");
  ASSERT_EQ(points.size(), 4u);
  const char* bandwidths[] = {"80Mbps", "80Mbps", "1Gbps", "1Gbps"};  // first axis outermost
  const char* exchanges[] = {"ring", "all_gather", "ring", "all_gather"};
  for (size_t i = 0; i < 4; ++i) {
    const json& p = points[i];
    EXPECT_EQ(p.at("settings").at("network.bandwidth"), bandwidths[i]);
    EXPECT_EQ(p.at("settings").at("parallel.exchange"), exchanges[i]);
    const json one = estimate_json(*this, run(kBase + "--set network.bandwidth=" + bandwidths[i] +
                                              " --set parallel.exchange=" + exchanges[i] + " --json"));
    for (const char* key : {"step_seconds", "tokens_per_s", "exposed_comm_seconds", "bound_seconds", "mfu",
                            "busiest_link_seconds", "latency_bound_seconds"})
      EXPECT_EQ(p.at(key), one.at(key)) << key << " at point " << i;
    EXPECT_EQ(p.at("bound_kind"), one.at("bound_kind"));
  }
  // More bandwidth: a shorter step and a lower bound.
  EXPECT_LT(points[2].at("step_seconds").get<double>(), points[0].at("step_seconds").get<double>());
  EXPECT_LT(points[2].at("bound_seconds").get<double>(), points[0].at("bound_seconds").get<double>());
}

TEST_F(Cli, EstimateGridTableAndCsv) {
  const fs::path csv = dir_ / "grid.csv";
  const CommandResult r = run(kBase + "--set network.bandwidth=80Mbps,300Mbps,1Gbps --csv " + csv.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Title, blank, header, 3 rows, blank, the note.
  EXPECT_NE(r.out.find("3 points"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("network.bandwidth  step s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n300Mbps "), std::string::npos) << r.out;
  EXPECT_EQ(lines(r.out), 8) << r.out;
  const std::string text = slurp(csv);
  const std::string header =
      "name,network.bandwidth,step_seconds,tokens_per_s,compute_seconds,exposed_comm_seconds,bound_seconds,"
      "bound_kind,step_over_bound,busiest_link,busiest_link_seconds,latency_bound_seconds,mfu\n";
  EXPECT_EQ(text.substr(0, header.size()), header);
  EXPECT_EQ(lines(text), 4);
  EXPECT_NE(text.find(",1Gbps,"), std::string::npos) << text;
  // The CSV's numbers are the JSON's.
  const json one = estimate_json(*this, run(kBase + "--set network.bandwidth=1Gbps --json"));
  EXPECT_NE(text.find("," + one.at("step_seconds").dump() + ","), std::string::npos) << text;
}

TEST_F(Cli, EstimateGridFromTheFilesSweepSection) {
  const fs::path file = dir_ / "grid.json";
  // quickstart.json with a sweep section, as `lowband sweep` reads it.
  std::string text = slurp(fs::path(LOWBAND_SOURCE_DIR) / "scenarios" / "quickstart.json");
  write("grid.json", text.substr(0, text.rfind('}')) + ",\n  \"sweep\": {\"network.bandwidth\": [\"80Mbps\", \"1Gbps\"]}\n}\n");
  const CommandResult r = run("estimate " + file.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json grid = json::parse(r.out);
  ASSERT_EQ(grid.at("points").size(), 2u);
  EXPECT_EQ(grid.at("points")[1].at("settings").at("network.bandwidth"), "1Gbps");
  // A --set of the axis's key fixes it: one point, the single estimate's output.
  const CommandResult fixed = run("estimate " + file.string() + " --set network.bandwidth=1Gbps --json");
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  EXPECT_FALSE(json::parse(fixed.out).contains("points"));
  EXPECT_EQ(json::parse(fixed.out).at("step_seconds"), grid.at("points")[1].at("step_seconds"));
}

TEST_F(Cli, EstimateGridPlotsTokensPerSecondAgainstBandwidth) {
  const fs::path svg = dir_ / "tps.svg";
  const CommandResult r = run(kBase + "--set compression.method=none,topk --set network.bandwidth=80Mbps,1Gbps --plot " +
                              svg.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(svg)) << r.out;
  EXPECT_NE(slurp(svg).find("<svg"), std::string::npos);
  const std::string data = slurp(dir_ / "tps.dat");
  EXPECT_NE(data.find("compression.method=none"), std::string::npos) << data;
  EXPECT_NE(data.find("compression.method=topk: bound"), std::string::npos) << data;
}

TEST_F(Cli, EstimateGridBadInputIsOneLineNamingTheFlagAndWritesNothing) {
  const fs::path csv = dir_ / "bad.csv", out = dir_ / "bad.json", svg = dir_ / "bad.svg";
  const std::string outputs = " --csv " + csv.string() + " --out " + out.string();
  struct Case {
    std::string args, flag;
  };
  const Case cases[] = {
      {"--set network.bandwidth=80Mbps,fast", "--set network.bandwidth=80Mbps,fast"},
      {"--set network.bandwidth=80Mbps,,1Gbps", "--set network.bandwidth=80Mbps,,1Gbps"},
      {"--set no.such_key=1,2", "--set no.such_key=1,2"},
      {"--set parallel.exchange=ring,all_gather --plot " + svg.string(), "--plot"},
      {"--set network.bandwidth=80Mbps,1Gbps --plot " + (dir_ / "x.pdf").string(), "--plot"},
      {"--plot " + svg.string(), "--plot"},
  };
  for (const Case& c : cases) {
    const CommandResult r = run(kBase + c.args + outputs);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out << r.err;
    EXPECT_EQ(lines(r.err), 1) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.flag), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_FALSE(fs::exists(csv) || fs::exists(out) || fs::exists(svg)) << c.args;
  }
}

// --out, --csv and --plot each name a file of their own; a gnuplot that fails
// leaves nothing (neither the plot's data and script nor --out and --csv).
TEST_F(Cli, EstimateOutputsAreDistinctAndAFailedPlotWritesNothing) {
  const fs::path same = dir_ / "same.json";
  for (const std::string& flags : {" --out " + same.string() + " --csv " + same.string(),
                                   " --out " + (dir_ / "p.dat").string() + " --plot " + (dir_ / "p.svg").string()}) {
    const CommandResult r = run(kBase + "--set network.bandwidth=80Mbps,1Gbps" + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("names the same file as --out"), std::string::npos) << r.err;
  }
  const fs::path fake = write("fake-gnuplot", "#!/bin/sh\n[ \"$1\" = --version ] && { echo gnuplot 5.4; exit 0; }\nexit 1\n");
  fs::permissions(fake, fs::perms::owner_all);
  ::setenv("LOWBAND_GNUPLOT", fake.c_str(), 1);
  const fs::path out = dir_ / "e.json", csv = dir_ / "e.csv";
  const CommandResult r = run(kBase + "--set network.bandwidth=80Mbps,1Gbps --plot " + (dir_ / "p.svg").string() +
                              " --out " + out.string() + " --csv " + csv.string());
  ::unsetenv("LOWBAND_GNUPLOT");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--plot"), std::string::npos) << r.err;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name == "fake-gnuplot" || name == "stdout" || name == "stderr") << "left behind: " << name;
  }
}

// --steps over a grid: taken when some point's network changes, whichever comes first.
TEST_F(Cli, EstimateStepsOverAGridDoNotDependOnThePointOrder) {
  json base = json::parse(slurp(std::string(LOWBAND_SOURCE_DIR) + "/scenarios/quickstart.json"));
  const json changing = json::array({{{"bandwidth", {{"steps", json::array({json::array({"1s", 0.5})})}}}}});
  for (const json& order : {json::array({json::array(), changing}), json::array({changing, json::array()})}) {
    base["sweep"] = {{"network.dynamics", order}};
    const fs::path file = write("grid.json", base.dump());
    const CommandResult r = run("estimate " + file.string() + " --steps 5");
    EXPECT_EQ(r.exit_code, 0) << order.dump() << "\n" << r.err;
  }
  base["sweep"] = {{"network.bandwidth", json::array({"80Mbps", "1Gbps"})}};
  const CommandResult r = run("estimate " + write("grid.json", base.dump()).string() + " --steps 5");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--steps: counts the steps replayed on a changing network"), std::string::npos) << r.err;
}

TEST_F(Cli, EstimateShowsThePhysicalBound) {
  const CommandResult r = run(kBase + "--set network.bandwidth=80Mbps");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* row : {"\nbound ", "\nbusiest link ", "\nlatency bound ", "\ncompute bound "})
    EXPECT_NE(r.out.find(row), std::string::npos) << row << "\n" << r.out;
  EXPECT_NE(r.out.find("x its bound"), std::string::npos) << r.out;
  const json j = estimate_json(*this, run(kBase + "--set network.bandwidth=80Mbps --json"));
  EXPECT_LE(j.at("bound_seconds").get<double>(), j.at("step_seconds").get<double>());
  EXPECT_NE(j.at("busiest_link").get<std::string>().find("node "), std::string::npos);
}

}  // namespace
}  // namespace lowband
