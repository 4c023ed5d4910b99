// Issue 28's bad inputs, class by class: each must end in exit 2, one line on
// stderr naming the place (a JSON path, a --set or another flag), and nothing
// written (docs/reliability.md). validate, sweep --dry-run, run and estimate all
// refuse a scenario the same way, so each is tried where it is cheap.
#include <gtest/gtest.h>

#include <string>

#include "runtime/scenario/load.h"
#include "tests/cli/cli_support.h"

namespace {

using lowband::test_support::Cli;
using lowband::test_support::CommandResult;

class BadInputCli : public Cli {
 protected:
  void expect_bad_input(const CommandResult& r, std::initializer_list<std::string> places) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    for (const std::string& place : places) EXPECT_NE(r.err.find(place), std::string::npos) << place << ": " << r.err;
  }
  // `set` refused by every command that reads a scenario, naming `--set SET` and `what`;
  // run leaves no directory and sweep --dry-run writes none.
  void expect_every_command_refuses(const std::string& set, const std::string& what) {
    const fs::path out = dir_ / "out";
    const std::string flag = "--set '" + set + "'";
    expect_bad_input(run("run --builtin default --steps 1 " + flag + " --out " + out.string()), {"--set " + set, what});
    EXPECT_FALSE(fs::exists(out)) << set;
    expect_bad_input(run("sweep --builtin default --dry-run " + flag + " --out " + out.string()), {"--set " + set, what});
    EXPECT_FALSE(fs::exists(out)) << set;
    expect_bad_input(run("estimate --builtin default " + flag), {"--set " + set, what});
  }
};

// Class 1: a bandwidth or latency SimGrid cannot time crashed the replay (exit 1,
// a backtrace, a partial run directory); now refused at validation.
TEST_F(BadInputCli, LinksSimGridCannotTimeAreRefusedBeforeAnythingIsWritten) {
  for (const std::string set : {"network.bandwidth=1e-310bps", "network.bandwidth=1e-300bps",
                                "network.latency=1e-320s", "network.upload_bandwidth=1e-310bps",
                                "network.bandwidth=2000Tbps", "network.latency=2000s"})
    expect_every_command_refuses(set, "out of range");
  nlohmann::json d = nlohmann::json::parse(lowband::builtin_scenario_text("default"));
  const nlohmann::json link = {{"nodes", 2}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}};
  d["network"] = {{"model", "ideal"}, {"topology", "clusters"}, {"clusters", {link, link}},
                  {"wan", {{"bandwidth", "1e-310bps"}, {"latency", "10ms"}}}};
  const auto p = write("wan.json", d.dump());
  expect_bad_input(run("validate " + p.string()), {p.string(), "network.wan.bandwidth", "out of range"});
}

// Class 2: network.simgrid was checked by SimGrid in the replay child, after the
// first step had trained and scenario.json, curve.csv and summary.json were written.
TEST_F(BadInputCli, SimgridSettingsAreCheckedBeforeAnythingTrains) {
  for (const std::string settings :
       {R"({"maxmin/precision": -1})", R"({"network/model": "NS3"})", R"({"cpu/model": "nope"})",
        R"({"network/bandwidth-factor": 0})", R"({"network/latency-factor": -5})", R"({"no/such-key": 1})"}) {
    const std::string key = settings.substr(2, settings.find('"', 2) - 2);
    expect_every_command_refuses("network.simgrid=" + settings, "network.simgrid." + key);
  }
}

}  // namespace
