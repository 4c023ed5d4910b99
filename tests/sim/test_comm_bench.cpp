// The nccl-tests-like table: rows, bandwidths and the closed-form check.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "networks.h"
#include "sim/comm_bench.h"

namespace lowband::sim {
namespace {

using testing::link;

TEST(CommBench, RowsMatchClosedFormsOnAHomogeneousStar) {
  // Star of 4, 1e8 B/s / 0.5 ms links (path latency 1 ms). For S = 4e6: all-reduce
  // 2*3*(1e6/1e8 + 1e-3) = 66 ms; algbw S/t; busbw algbw * 2*3/4.
  const NetworkSpec net = testing::star(4, link(1e8, 5e-4));
  const auto rows = run_comm_bench(net, {}, {4e6, 8e6},
                                   {Collective::all_reduce, Collective::all_gather, Collective::p2p});
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].collective, Collective::all_reduce);
  EXPECT_EQ(rows[0].size_bytes, 4e6);
  EXPECT_EQ(rows[3].size_bytes, 8e6);  // ordered by size, then collective
  EXPECT_NEAR(rows[0].time_seconds, 0.066, 1e-3 * 0.066);
  EXPECT_NEAR(rows[0].algbw_bytes_per_s, 4e6 / 0.066, 1e-3 * 4e6 / 0.066);
  EXPECT_NEAR(rows[0].busbw_bytes_per_s, 1.5 * 4e6 / 0.066, 1e-3 * 1.5 * 4e6 / 0.066);
  EXPECT_EQ(rows[2].ranks, 2);  // p2p between the first two ranks: 1 ms + 40 ms
  EXPECT_NEAR(rows[2].time_seconds, 0.041, 1e-3 * 0.041);
  for (const auto& r : rows) EXPECT_LT(std::fabs(r.deviation), kCommBenchTolerance) << to_string(r.collective);

  std::ostringstream out;
  print_comm_bench(out, net, rows);
  const std::string text = out.str();
  EXPECT_NE(text.find("# network: star, 4 nodes, 800 Mbps / 500 us per access link (path latency 1 ms), model ideal"), std::string::npos);
  EXPECT_NE(text.find("size(B)"), std::string::npos);
  EXPECT_NE(text.find("more than 0.1%: 0"), std::string::npos);
}

TEST(CommBench, NoClosedFormOnClusters) {
  const auto rows = run_comm_bench(testing::two_clusters(2, 2, link(1e10, 1e-5), link(1e8, 1e-2)), {0, 1, 2, 3},
                                   {1e6}, {Collective::all_gather});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(std::isnan(rows[0].expected_seconds));
  EXPECT_TRUE(std::isnan(rows[0].deviation));
  EXPECT_GT(rows[0].time_seconds, 0);
  std::ostringstream out;
  print_comm_bench(out, testing::two_clusters(2, 2, link(1e10, 1e-5), link(1e8, 1e-2)), rows);
  // Rows without a closed form are not counted as right or wrong: the table says there is none.
  EXPECT_NE(out.str().find("no closed form for this network"), std::string::npos);
  EXPECT_EQ(out.str().find("off the closed form"), std::string::npos);
}

TEST(CommBench, TcpModelMatchesItsClosedForms) {
  // Warm and fresh connections: p2p, rings (fresh ones pay their startup in the first
  // rounds) and a warm incast, on a 300 Mbps / 5 ms star; all-to-all has none.
  for (ConnectionState connections : {ConnectionState::warm, ConnectionState::fresh}) {
    NetworkSpec net = testing::star(4, link(37.5e6, 5e-3), NetworkModel::tcp);
    net.tcp.connections = connections;
    const auto rows = run_comm_bench(net, {}, {1 << 20, 16 << 20},
                                     {Collective::p2p, Collective::all_gather, Collective::all_reduce,
                                      Collective::incast, Collective::all_to_all});
    for (const auto& r : rows) {
      const bool none = r.collective == Collective::all_to_all ||
                        (r.collective == Collective::incast && connections == ConnectionState::fresh);
      EXPECT_EQ(std::isnan(r.expected_seconds), none) << to_string(r.collective);
      if (none) continue;
      EXPECT_LT(std::fabs(r.deviation), kCommBenchTolerance) << to_string(r.collective) << " " << r.size_bytes;
    }
    std::ostringstream out;
    print_comm_bench(out, net, rows);
    EXPECT_NE(out.str().find("model tcp (cubic, send buffer 4 MiB, " + std::string(to_string(connections))),
              std::string::npos)
        << out.str();
  }
}

}  // namespace
}  // namespace lowband::sim
