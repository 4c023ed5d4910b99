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
  EXPECT_NE(text.find("# network: star, 4 nodes, 800 Mbps / 500 us access links, model ideal"), std::string::npos);
  EXPECT_NE(text.find("size(B)"), std::string::npos);
  EXPECT_NE(text.find("more than 0.1%: 0"), std::string::npos);
}

TEST(CommBench, NoClosedFormOnClustersOrTcp) {
  // Clusters and the tcp model have no closed form here: expected and deviation are NaN.
  const auto rows = run_comm_bench(testing::two_clusters(2, 2, link(1e10, 1e-5), link(1e8, 1e-2)), {0, 1, 2, 3},
                                   {1e6}, {Collective::all_gather});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(std::isnan(rows[0].expected_seconds));
  EXPECT_TRUE(std::isnan(rows[0].deviation));
  EXPECT_GT(rows[0].time_seconds, 0);
  std::ostringstream out;
  print_comm_bench(out, testing::star(2, link(1e8, 1e-3), NetworkModel::tcp),
                   run_comm_bench(testing::star(2, link(1e8, 1e-3), NetworkModel::tcp), {}, {1e6}, {Collective::p2p}));
  EXPECT_NE(out.str().find("model tcp"), std::string::npos);
  // Rows without a closed form are not counted as right or wrong: the table says there is none.
  EXPECT_NE(out.str().find("no closed form for this network"), std::string::npos);
  EXPECT_EQ(out.str().find("off the closed form"), std::string::npos);
}

}  // namespace
}  // namespace lowband::sim
