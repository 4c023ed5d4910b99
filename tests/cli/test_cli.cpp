// End-to-end tests of the `lowband` binary: exit codes, one-line errors that name
// the place, nothing written on bad input, and machine-readable output.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "runtime/scenario/load.h"
#include "tests/cli/cli_support.h"

namespace {

using lowband::test_support::Cli;
using lowband::test_support::slurp;

const std::string kScenarios = std::string(LOWBAND_SOURCE_DIR) + "/scenarios/";

TEST_F(Cli, ValidateAcceptsEveryShippedScenario) {
  std::string files;
  for (const auto& entry : fs::directory_iterator(kScenarios))
    if (entry.path().extension() == ".json") files += " " + entry.path().string();  // as `validate scenarios/*.json`
  ASSERT_FALSE(files.empty());
  const auto r = run("validate" + files);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ok"), std::string::npos);
}

// A measured network alone (scenarios/networks/*.json) validates as the network of
// the default on one rank, and says what it is.
TEST_F(Cli, ValidateChecksANetworkFileOnItsOwn) {
  const auto r = run("validate " + kScenarios + "networks/aws-8-regions.json " + kScenarios +
                     "networks/us-home-broadband.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("aws-8-regions.json  (network: explicit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("us-home-broadband.json  (network: star, 8 nodes"), std::string::npos) << r.out;
  const auto resolved = run("validate --resolved " + kScenarios + "networks/us-home-broadband.json");
  EXPECT_EQ(resolved.exit_code, 0) << resolved.err;
  EXPECT_NE(resolved.out.find("\"upload_bandwidth\":\"21.6Mbps\""), std::string::npos) << resolved.out;
}

// --resolved prints what a run would train: the file with every default filled
// in (scripts/train-or-resume.sh stamps runs with it, so a changed default restarts them).
TEST_F(Cli, ValidateResolvedPrintsTheScenarioWithItsDefaults) {
  const std::string file = kScenarios + "quickstart.json";
  const auto r = run("validate --resolved " + file + " " + file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string first, second;
  ASSERT_TRUE(std::getline(lines, first) && std::getline(lines, second)) << r.out;
  const nlohmann::json printed = nlohmann::json::parse(first);
  EXPECT_EQ(printed, lowband::to_json(lowband::load_scenario_file(file)));
  EXPECT_EQ(nlohmann::json::parse(second), printed);
  // More than the file says: the defaults are there.
  EXPECT_GT(printed.flatten().size(), nlohmann::json::parse(slurp(file)).flatten().size());
}

TEST_F(Cli, MissingFileIsOneLineErrorWithStatus2) {
  const auto r = run("validate " + (dir_ / "nope.json").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("nope.json"), std::string::npos) << r.err;
}

TEST_F(Cli, InvalidJsonNamesLineAndColumn) {
  const auto p = write("bad.json", "{\n  \"name\": \"x\",\n  \"model\": {,}\n}\n");
  const auto r = run("validate " + p.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("bad.json:3:13:"), std::string::npos) << r.err;  // file:line:column
}

TEST_F(Cli, UnknownKeyNamesPathAndSuggestion) {
  const auto r = run("estimate --set network.bandwith=1Gbps");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("network"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bandwidth"), std::string::npos) << r.err;
}

TEST_F(Cli, TransportIsOnlyForMpirun) {
  const fs::path out = dir_ / "run";
  const auto r = run("run --transport nccl --steps 1 --out " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(lines(r.err), 2) << r.err;  // the built-in scenario's note, then the error
  EXPECT_NE(r.err.find("--transport"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(Cli, BadInputWritesNothing) {
  const fs::path out = dir_ / "estimate.json";
  const auto r = run("estimate --set network.bandwidth=0Mbps --out " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_NE(r.err.find("network.bandwidth"), std::string::npos) << r.err;
}

TEST_F(Cli, UnknownCommandIsUsageError) {
  const auto r = run("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(Cli, EstimateJsonOnDefaultScenario) {
  const fs::path out = dir_ / "estimate.json";
  const auto r = run("estimate --json --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto printed = nlohmann::json::parse(r.out);
  const auto written = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(printed, written);
  // tokens/s is tokens per step over the step time, by definition.
  const double step_s = printed.at("step_seconds").get<double>();
  ASSERT_GT(step_s, 0);
  EXPECT_NEAR(printed.at("tokens_per_s").get<double>() * step_s, printed.at("tokens_per_step").get<double>(),
              1e-6 * printed.at("tokens_per_step").get<double>());
  EXPECT_EQ(printed.at("network_model"), "ideal");
}

TEST_F(Cli, EstimateTableEchoesNetworkModel) {
  const auto r = run("estimate " + kScenarios + "tcp-model.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tcp"), std::string::npos) << r.out;
}

TEST_F(Cli, BenchCommMatchesClosedFormOnIdealStar) {
  const auto r = run("bench-comm --sizes 1MB,64MB --collectives all_reduce,all_gather");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ideal"), std::string::npos) << r.out;
  // 2 sizes x 2 collectives, each within 0.1 % of its alpha-beta time.
  EXPECT_NE(r.out.find("by more than 0.1%: 0 of 4\n"), std::string::npos) << r.out;
}

TEST_F(Cli, BenchCommSaysWhenThereIsNoClosedForm) {
  const auto r = run("bench-comm " + kScenarios + "clusters-wan.json --sizes 1MB --collectives all_gather");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no closed form for this network"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("off the closed form"), std::string::npos) << r.out;
}

TEST_F(Cli, BenchCommNeedsOnlyANetwork) {
  // A file with only a network section: every node takes part; JSON rows with the tcp
  // model's closed form; a bad value names its path in the file.
  const fs::path net = write("net.json", R"({"network": {"model": "tcp", "topology": "star", "nodes": 3,
      "bandwidth": "1Gbps", "latency": "12.5ms", "tcp": {"send_buffer": "16MiB"}}})");
  const auto r = run("bench-comm " + net.string() + " --json --sizes 8MiB --collectives p2p,incast");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_NE(j["network"].get<std::string>().find("3 nodes, 1 Gbps / 12.5 ms per access link (path latency 25 ms)"),
            std::string::npos)
      << j.dump();
  ASSERT_EQ(j["rows"].size(), 2u);
  for (const auto& row : j["rows"]) {
    EXPECT_LT(std::abs(row["deviation"].get<double>()), 1e-3) << row.dump();
    EXPECT_EQ(row["ranks"].get<int>(), row["collective"] == "incast" ? 3 : 2) << row.dump();
  }
  // p2p alone: 25 ms + 8 MiB at 1448/1514 of 1 Gbps (16 MiB of buffer covers the path).
  const double p2p = 0.025 + 8 * 1048576 / (125e6 * 1448.0 / 1514.0);
  EXPECT_NEAR(j["rows"][0]["time_seconds"].get<double>(), p2p, 1e-3 * p2p);
  const auto bad = run("bench-comm " + net.string() + " --set network.tcp.send_buffer=1KiB");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("network.tcp.send_buffer"), std::string::npos) << bad.err;
}

TEST_F(Cli, BenchCommBadSizeNamesFlag) {
  const auto r = run("bench-comm --sizes 1Mb");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--sizes"), std::string::npos) << r.err;
}

// --transport in-process times lowband's own communicator: nccl-tests' columns,
// every result checked (#wrong), all four collectives at each size.
TEST_F(Cli, BenchCommInProcessTimesAndChecksEveryCollective) {
  const auto r = run("bench-comm --transport in-process --ranks 3 --sizes 1KB,100KB --iters 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("busbw"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# #wrong in all: 0\n"), std::string::npos) << r.out;
  int rows = 0;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    ++rows;
    EXPECT_EQ(line.substr(line.find_last_not_of(' ')), "0") << line;  // #wrong
  }
  EXPECT_EQ(rows, 2 * 4) << r.out;
}

// --per-call: a line per timed call under its row, and the row's time is their mean
// (each call started together, the slowest rank's time).
TEST_F(Cli, BenchCommPerCallLinesAverageToTheRow) {
  const auto r = run("bench-comm --transport in-process --ranks 3 --sizes 4KB --collectives all_gather,reduce_scatter "
                     "--iters 4 --per-call");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  std::vector<double> rows_us;
  std::vector<std::vector<double>> calls_us;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string first, name, word;
    fields >> first;
    if (line.find(" us (slowest rank), started at ") != std::string::npos) {
      int index = -1;
      double us = 0;
      fields >> name >> word >> index;  // "#   all_gather call 2: 12.3 us ..."
      fields.ignore(1) >> us;
      ASSERT_FALSE(calls_us.empty()) << line;
      EXPECT_EQ(index, int(calls_us.back().size())) << line;
      calls_us.back().push_back(us);
    } else if (!first.empty() && first[0] != '#') {
      double size = 0, time = 0;
      std::string count, type, collective, root;
      std::istringstream row(line);
      row >> size >> count >> type >> collective >> root >> time;
      rows_us.push_back(time);
      calls_us.emplace_back();
    }
  }
  ASSERT_EQ(rows_us.size(), 2u) << r.out;
  for (size_t i = 0; i < rows_us.size(); ++i) {
    ASSERT_EQ(calls_us[i].size(), 4u) << r.out;
    double sum = 0;
    for (double us : calls_us[i]) sum += us;
    EXPECT_NEAR(sum / 4, rows_us[i], 0.11) << r.out;  // each printed to 0.1 us
  }
}

// What a real transport would ignore is refused, one line naming it: --json and
// --pair (the simulated bench's), a scenario it could not read; and --pair without
// a p2p row to place.
TEST_F(Cli, BenchCommRefusesWhatItWouldIgnore) {
  const std::string in_process = "bench-comm --transport in-process --sizes 1KB --collectives all_reduce ";
  const std::pair<std::string, std::string> cases[] = {
      {in_process + "--json", "--json: only with --transport simulated"},
      {"bench-comm --transport in-process --sizes 1KB --pair 0,1", "--pair: only with --transport simulated"},
      {"bench-comm /no/such/scenario.json --transport in-process --sizes 1KB", "/no/such/scenario.json: no such scenario file"},
      {in_process + "--builtin nope", "--builtin: no built-in scenario named \"nope\""},
      {in_process + "--builtin default --set no.key=1", "--set no.key=1: unknown key"},
      {"bench-comm --sizes 1KB --collectives all_reduce --pair 0,1", "--pair: places the p2p row"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out << r.err;
    EXPECT_EQ(lines(r.err), 1) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
  }
  const auto r = run(in_process + "--builtin default --iters 1");  // the scenario's ranks, read in full
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(Cli, BenchCommRealTransportsNameTheirFlags) {
  auto r = run("bench-comm --transport mpi");  // not under mpirun
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--transport"), std::string::npos) << r.err;
  r = run("bench-comm --transport in-process --collectives p2p");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--collectives"), std::string::npos) << r.err;
  r = run("bench-comm --transport carrier-pigeon");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--transport"), std::string::npos) << r.err;
}

}  // namespace
