// `lowband estimate` of data-parallel layouts end to end: the JSON of a
// heterogeneous SparseLoCo scenario (keys with units, the period average), the
// table, the relay exchange, and a bad upload_bandwidth or relay as a one-line
// error with status 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/cli_support.h"

namespace {

using lowband::test_support::Cli;

const std::string kScenarios = std::string(LOWBAND_SOURCE_DIR) + "/scenarios/";

TEST_F(Cli, DataEstimateJsonAveragesTheSyncPeriod) {
  const auto r = run("estimate --json " + kScenarios + "hetero-sparseloco-small.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("parallelism"), "data");
  EXPECT_EQ(j.at("data_sync"), "sparseloco");
  EXPECT_EQ(j.at("replicas"), 4);
  EXPECT_EQ(j.at("ranks"), 6);
  const double H = j.at("inner_steps").get<double>();
  ASSERT_EQ(H, 5);
  const double inner = j.at("inner_step_seconds").get<double>(), sync = j.at("sync_step_seconds").get<double>();
  EXPECT_GT(sync, inner);
  EXPECT_NEAR(j.at("step_seconds").get<double>(), (sync + (H - 1) * inner) / H, 1e-12 * sync);
  EXPECT_NEAR(j.at("comm_per_sync_seconds").get<double>(), sync - inner - j.at("outer_compute_seconds").get<double>(),
              1e-12 * sync);
  EXPECT_GT(j.at("outer_compute_seconds").get<double>(), 0);
  EXPECT_GT(j.at("bytes_per_rank_per_sync").at("pseudo_grad").get<double>(), 0);
  EXPECT_EQ(j.at("part_message_bytes").size(), 2u);  // layers [0,2) and [2,4)
  for (const char* key : {"compute_seconds", "exposed_comm_seconds", "compute_utilisation", "mfu",
                          "message_bytes_per_replica", "tokens_per_s"})
    EXPECT_TRUE(j.contains(key)) << key;
}

TEST_F(Cli, DataEstimateTableSaysWhatTheSyncCosts) {
  const auto r = run("estimate " + kScenarios + "hetero-sparseloco-small.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("4 replicas (0-1: 1 node; 2-3: 2 stages, boundaries compressed)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("comm per sync"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("compute utilisation"), std::string::npos) << r.out;
}

TEST_F(Cli, BadUploadBandwidthIsOneLineNamingTheKey) {
  const auto r = run("estimate --builtin default --set network.upload_bandwidth=0Mbps");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("network.upload_bandwidth"), std::string::npos) << r.err;
}

// The relay in a cluster of its own (node 6): each rank uploads its message
// once, and the relay sends each on to the other holders of its part.
TEST_F(Cli, DataEstimateThroughTheRelay) {
  const std::string relay =
      " --set parallel.data_sync.exchange=relay"
      " --set 'network.clusters.3={\"nodes\": 1, \"bandwidth\": \"10Gbps\", \"latency\": \"1ms\"}'";
  const auto r = run("estimate --json " + kScenarios + "hetero-sparseloco-small.json" + relay);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("exchange"), "relay");
  EXPECT_EQ(j.at("relay_node"), 6);
  EXPECT_GT(j.at("relay_bytes_per_sync").get<double>(), j.at("bytes_per_rank_per_sync").at("pseudo_grad").get<double>());
  const auto table = run("estimate " + kScenarios + "hetero-sparseloco-small.json" + relay);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("through the relay on node 6"), std::string::npos) << table.out;
}

TEST_F(Cli, BadRelayIsOneLineNamingTheKey) {
  struct Case {
    std::string sets, key;
  };
  for (const Case& c : {Case{"--set parallel.data_sync.exchange=relay", "parallel.data_sync.relay_node"},
                        Case{"--set 'parallel.data_sync={\"method\": \"diloco\", \"exchange\": \"relay\"}'",
                             "parallel.data_sync.exchange"},
                        Case{"--set parallel.data_sync.exchange=relay --set parallel.data_sync.relay_node=9",
                             "parallel.data_sync.relay_node"}}) {
    const auto r = run("estimate " + kScenarios + "hetero-sparseloco-small.json " + c.sets);
    EXPECT_EQ(r.exit_code, 2) << c.sets;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(c.key), std::string::npos) << r.err;
  }
}

}  // namespace

// One rule picks the layout for run and estimate (parallel::layout_kind): a single
// parallel.replicas entry is one replica, trained by the pipeline trainer, so its
// estimate is the pipeline estimate, not a data-parallel one of one replica.
TEST_F(Cli, OneReplicaIsEstimatedAsTheLayoutThatTrainsIt) {
  const std::string stages = " --set parallel.pipeline=2 --set parallel.stage_layers=[2,2]";
  const auto plain = run("estimate --json " + kScenarios + "pp-small.json" + stages);
  const auto one = run("estimate --json " + kScenarios + "pp-small.json" + stages +
                       " --set 'parallel.replicas=[{\"pipeline\":2,\"nodes\":[0,1]}]'");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto a = nlohmann::json::parse(plain.out), b = nlohmann::json::parse(one.out);
  EXPECT_EQ(b.at("parallelism"), a.at("parallelism"));
  EXPECT_EQ(b.at("step_seconds"), a.at("step_seconds"));
}
