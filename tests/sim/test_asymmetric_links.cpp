// Access links that upload slower than they download (star.upload_bandwidth,
// a node override's, a cluster's): a transfer is limited by the sender's upload
// and the receiver's download, and the two directions of a link do not share,
// under the ideal (alpha-beta) model.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "common/error.h"
#include "networks.h"
#include "sim/collectives.h"
#include "sim/replay.h"

namespace lowband::sim {
namespace {

using testing::kTolerance;
using testing::link;

constexpr double L = 1e-3;  // s per access link
constexpr double S = 1e6;   // bytes

// Node 0 uploads at 1.25 MB/s (10 Mbps) and downloads at 12.5 MB/s; node 1
// uploads at 12.5 MB/s and downloads at 2.5 MB/s.
NetworkSpec lopsided() {
  NetworkSpec n = testing::star(3, Link{12.5e6, L, 1.25e6});
  n.node_links.push_back(NodeLink{1, Link{2.5e6, L, 12.5e6}});
  return n;
}

TEST(AsymmetricLinks, ATransferIsLimitedByTheSendersUploadAndTheReceiversDownload) {
  const NetworkSpec n = lopsided();
  struct Case {
    int from, to;
    double bottleneck_bytes_per_s;
  };
  // 0 -> 1: min(up 1.25, down 2.5); 1 -> 0: min(up 12.5, down 12.5); 1 -> 2: min(12.5, 12.5); 2 -> 1: min(1.25, 2.5).
  for (const Case& c : {Case{0, 1, 1.25e6}, Case{1, 0, 12.5e6}, Case{1, 2, 12.5e6}, Case{2, 1, 1.25e6}}) {
    StepGraph g(3);
    g.add_transfer(c.from, c.to, S, {}, "x");
    const double expected = 2 * L + S / c.bottleneck_bytes_per_s;
    EXPECT_NEAR(replay(n, g).step_seconds, expected, kTolerance * expected) << c.from << " -> " << c.to;
  }
}

TEST(AsymmetricLinks, TheTwoDirectionsDoNotShare) {
  // 0 -> 1 and 1 -> 0 at once: each alone on its links, so the slower one's time.
  const NetworkSpec n = lopsided();
  StepGraph g(3);
  g.add_transfer(0, 1, S, {}, "x");
  g.add_transfer(1, 0, S, {}, "x");
  const double expected = 2 * L + S / 1.25e6;
  EXPECT_NEAR(replay(n, g).step_seconds, expected, kTolerance * expected);
  // Two receivers of node 0's upload share it: 2S over 1.25 MB/s.
  StepGraph fan(3);
  fan.add_transfer(0, 1, S, {}, "x");
  fan.add_transfer(0, 2, S, {}, "x");
  const double shared = 2 * L + 2 * S / 1.25e6;
  EXPECT_NEAR(replay(n, fan).step_seconds, shared, kTolerance * shared);
}

TEST(AsymmetricLinks, ClustersAccessLinksAndDescription) {
  NetworkSpec c = testing::two_clusters(1, 1, Link{12.5e6, L, 2.5e6}, link(1.25e9, 0));
  StepGraph g(2);
  g.add_transfer(0, 1, S, {}, "x");
  const double expected = 2 * L + S / 2.5e6;  // the WAN is fast: node 0's upload limits
  EXPECT_NEAR(replay(c, g).step_seconds, expected, kTolerance * expected);
  EXPECT_EQ(describe(testing::star(2, Link{62.5e6, 0.01, 13.75e6})),
            "star, 2 nodes, 500 Mbps down, 110 Mbps up / 10 ms per access link (path latency 20 ms), model ideal");
}

TEST(AsymmetricLinks, ARelayedAllGatherIsOneUploadAndTheOthersDownloads) {
  // The exchange through a relay (an object store on a fat link, node R):
  // every node uploads its S bytes once, then downloads the R − 1 others',
  // which share its download link: S/U + (R − 1)·S/D + 4L (two paths of 2L).
  // analysis/sparseloco-estimate.md compares it with the ring.
  const int R = 5;
  const double U = 1.25e6, D = 6.25e6;
  NetworkSpec n = testing::star(R + 1, Link{D, L, U});
  n.node_links.push_back(NodeLink{R, link(1e9, L)});
  StepGraph g(R + 1);
  std::vector<int> ranks;
  for (int r = 0; r < R; ++r) ranks.push_back(r);
  relay_all_gather(g, ranks, R, R * S, {}, "pseudo_grad");
  const double expected = S / U + (R - 1) * S / D + 4 * L;
  EXPECT_NEAR(relay_all_gather_seconds(R, R * S, U, D, 1e9, 1e9, 2 * L), expected, 1e-12 * expected);
  EXPECT_NEAR(replay(n, g).step_seconds, expected, kTolerance * expected);
}

// The relay's own link shared: the R uploads of S bytes share its download (In),
// the R(R − 1) downloads its upload (Out). Each upload flows at min(U, In/R); each
// download at min(D/(R − 1), Out/(R(R − 1))), and a rank has R − 1 of them:
// 2(L + Lr) + S/min(U, In/R) + (R − 1)·S/min(D, Out/R).
class RelayOnAStar : public ::testing::TestWithParam<int> {};

TEST_P(RelayOnAStar, IsTheClosedFormWithTheRelaysLinkShared) {
  const int R = GetParam();
  const double U = 1.25e6, D = 6.25e6, Lr = 4e-3;
  struct Relay {
    double in, out;
  };
  // Fat; its download the bottleneck of the uploads (R ≥ 3); its upload the
  // bottleneck of the downloads (R ≥ 2); both.
  for (const Relay relay : {Relay{1e9, 1e9}, Relay{2.5e6, 1e9}, Relay{1e9, 10e6}, Relay{2.5e6, 10e6}}) {
    NetworkSpec n = testing::star(R + 1, Link{D, L, U});
    n.node_links.push_back(NodeLink{R, Link{relay.in, Lr, relay.out}});
    StepGraph g(R + 1);
    std::vector<int> ranks;
    for (int r = 0; r < R; ++r) ranks.push_back(r);
    const std::vector<TaskId> done = relay_all_gather(g, ranks, R, R * S, {}, "pseudo_grad");
    ASSERT_EQ(done.size(), size_t(R));
    const double expected = 2 * (L + Lr) + S / std::min(U, relay.in / R) + (R - 1) * S / std::min(D, relay.out / R);
    EXPECT_NEAR(relay_all_gather_seconds(R, R * S, U, D, relay.in, relay.out, L + Lr), expected, 1e-12 * expected);
    EXPECT_NEAR(replay(n, g).step_seconds, expected, kTolerance * expected)
        << "R " << R << ", relay in " << relay.in << ", out " << relay.out;
    // Each rank sends its message once; the relay sends each on R − 1 times.
    for (int r = 0; r < R; ++r) EXPECT_DOUBLE_EQ(g.bytes_sent(r), S);
    EXPECT_DOUBLE_EQ(g.bytes_sent(R), R * (R - 1) * S);
  }
}

INSTANTIATE_TEST_SUITE_P(R, RelayOnAStar, ::testing::Values(2, 3, 5, 8));

TEST(AsymmetricLinks, ARelayedMessageGoesDownOnlyAfterItsUpload) {
  // Rank 1 starts its upload 1 s late: the others' copies of its message leave
  // the relay after that upload, the rest do not wait for it.
  const double U = 1.25e6, D = 6.25e6;
  NetworkSpec n = testing::star(4, Link{D, L, U});
  n.node_links.push_back(NodeLink{3, link(1e9, L)});
  StepGraph g(4);
  const TaskId late = g.add_compute(1, 1.0, {}, "compute");
  relay_all_gather(g, {0, 1, 2}, 3, 3 * S, {{}, {late}, {}}, "pseudo_grad");
  for (const Task& t : g.tasks())
    if (t.kind == TaskKind::transfer && t.rank == 3) {  // a download: after one upload, of the same bytes
      ASSERT_EQ(t.deps.size(), 1u);
      const Task& up = g.task(t.deps[0]);
      EXPECT_EQ(up.peer, 3);
      EXPECT_NE(up.rank, t.peer);
      EXPECT_DOUBLE_EQ(up.bytes, S);
      EXPECT_DOUBLE_EQ(t.bytes, S);
    }
  const ReplayResult r = replay(n, g, ReplayOptions{true});
  for (size_t i = 0; i < g.tasks().size(); ++i) {
    const Task& t = g.tasks()[i];
    if (t.kind != TaskKind::transfer || t.rank != 3) continue;
    const bool of_late = g.task(t.deps[0]).rank == 1;
    EXPECT_EQ(r.task_start_seconds[i] >= 1.0, of_late) << "download to " << t.peer;
  }
  EXPECT_THROW(relay_all_gather(g, {0, 1}, 1, S, {}, "x"), std::invalid_argument);
}

TEST(AsymmetricLinks, ANonPositiveUploadIsRefusedNamingTheKey) {
  NetworkSpec n = testing::star(2, Link{12.5e6, L, -1});
  StepGraph g(2);
  g.add_transfer(0, 1, S, {}, "x");
  try {
    replay(n, g);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "network.link.upload_bandwidth");
  }
}

}  // namespace
}  // namespace lowband::sim
