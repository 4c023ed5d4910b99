// The tcp model's closed-form pieces (sim/tcp_model.h), and the replay agreeing with them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "networks.h"
#include "sim/replay.h"
#include "sim/tcp_model.h"

namespace lowband::sim {
namespace {

using testing::link;

constexpr double kMiB = 1048576;

NetworkSpec tcp_star(double bandwidth, double link_latency, double send_buffer, ConnectionState connections) {
  NetworkSpec net = testing::star(2, link(bandwidth, link_latency), NetworkModel::tcp);
  net.tcp.send_buffer_bytes = send_buffer;
  net.tcp.connections = connections;
  return net;
}

double replay_p2p(const NetworkSpec& net, double bytes, int messages = 1) {
  StepGraph g(2);
  TaskId last = -1;
  for (int i = 0; i < messages; ++i)
    last = g.add_transfer(0, 1, bytes, last < 0 ? std::vector<TaskId>{} : std::vector<TaskId>{last}, "kv");
  return replay(net, g).step_seconds;
}

TEST(TcpModel, WarmTransferIsLatencyPlusSizeOverPayloadRate) {
  // 100 Mbit/s, 1 ms per link (2 ms path), 8 MiB: the window is not the limit.
  const double B = 12.5e6, L = 2e-3, S = 8 * kMiB;
  TcpSettings tcp;
  TcpConnection warm = tcp_initial_connection(ConnectionState::warm);
  const double expected = L + S / (B * 1448.0 / 1514.0);
  EXPECT_NEAR(tcp_message_seconds(S, B, L, tcp, warm), expected, 1e-12 * expected);
  const double replayed = replay_p2p(tcp_star(B, L / 2, 4 * kMiB, ConnectionState::warm), S);
  EXPECT_NEAR(replayed, expected, 0.01 * expected);
}

TEST(TcpModel, SendBufferCapsTheWindowOnLongFastPaths) {
  // 1 Gbit/s, 25 ms one-way path (50 ms round trip): 4 MiB of send buffer cannot fill
  // the 6.25 MB pipe, 16 MiB can.
  const double B = 125e6, L = 0.025, S = 64 * kMiB;
  TcpSettings small, large;
  large.send_buffer_bytes = 16 * kMiB;
  const double capped = tcp_window_bytes(small) / (2 * L);
  EXPECT_LT(capped, B * kTcpPayloadPerFrame);
  EXPECT_NEAR(tcp_rate_bytes_per_s(B, 2 * L, small), capped, 1e-12 * capped);
  EXPECT_NEAR(tcp_rate_bytes_per_s(B, 2 * L, large), B * kTcpPayloadPerFrame, 1.0);
  EXPECT_GT(tcp_window_bytes(small), 0.5 * small.send_buffer_bytes);  // most of the buffer is data
  EXPECT_LT(tcp_window_bytes(small), small.send_buffer_bytes);
  // With the small buffer the message leaves one window per round trip, each burst at
  // the line rate (k = ceil(S / W) bursts, the last one partial); with the large one
  // everything goes at the line rate.
  const double W = tcp_window_bytes(small), line = B * kTcpPayloadPerFrame;
  const double rounds = std::ceil(S / W) - 1;
  const double expected_small = std::max(L + rounds * 2 * L + (S - rounds * W) / line, S / (W / (2 * L)));
  const double expected_large = L + S / line;
  for (auto [buffer, expected] : {std::pair{4 * kMiB, expected_small}, std::pair{16 * kMiB, expected_large}}) {
    TcpSettings tcp;
    tcp.send_buffer_bytes = buffer;
    TcpConnection warm = tcp_initial_connection(ConnectionState::warm);
    EXPECT_NEAR(tcp_message_seconds(S, B, L, tcp, warm), expected, 1e-12 * expected) << buffer;
    const double replayed = replay_p2p(tcp_star(B, L / 2, buffer, ConnectionState::warm), S);
    EXPECT_NEAR(replayed, expected, 0.01 * expected) << buffer;
  }
  // A message that fits in the window is not capped: 1 MiB < W goes at the line rate.
  TcpConnection warm = tcp_initial_connection(ConnectionState::warm);
  const double one = L + kMiB / line;
  EXPECT_NEAR(tcp_message_seconds(kMiB, B, L, small, warm), one, 1e-12 * one);
  EXPECT_NEAR(replay_p2p(tcp_star(B, L / 2, 4 * kMiB, ConnectionState::warm), kMiB), one, 0.01 * one);
}

TEST(TcpModel, FreshConnectionPaysHandshakeAndSlowStartOnce) {
  const double B = 125e6, L = 0.010, S = 8 * kMiB;
  TcpSettings tcp;
  tcp.send_buffer_bytes = 16 * kMiB;
  TcpConnection warm = tcp_initial_connection(ConnectionState::warm);
  TcpConnection fresh = tcp_initial_connection(ConnectionState::fresh);
  const double warm_s = tcp_message_seconds(S, B, L, tcp, warm);
  const double first = tcp_message_seconds(S, B, L, tcp, fresh);
  EXPECT_TRUE(fresh.open);
  // At least the handshake's round trip and one slow-start round more than warm.
  EXPECT_GT(first, warm_s + 2 * (2 * L));
  const double second = tcp_message_seconds(S, B, L, tcp, fresh);
  EXPECT_LT(second, first);
  EXPECT_GE(second, warm_s - 1e-12);
  // Slow start costs more with more bandwidth x delay.
  TcpConnection near_conn = tcp_initial_connection(ConnectionState::fresh);
  TcpConnection warm2 = tcp_initial_connection(ConnectionState::warm);
  const double near_extra = tcp_message_seconds(S, B, 0.001, tcp, near_conn) - tcp_message_seconds(S, B, 0.001, tcp, warm2);
  const double far_extra = first - warm_s;
  EXPECT_GT(far_extra, 3 * near_extra);
  // The replay charges the same: the first of two back-to-back messages pays, the second less.
  const NetworkSpec net = tcp_star(B, L / 2, 16 * kMiB, ConnectionState::fresh);
  EXPECT_NEAR(replay_p2p(net, S), first, 0.01 * first);
  EXPECT_NEAR(replay_p2p(net, S, 2), first + second, 0.01 * (first + second));
  EXPECT_NEAR(replay_p2p(tcp_star(B, L / 2, 16 * kMiB, ConnectionState::warm), S), warm_s, 0.01 * warm_s);
}

TEST(TcpModel, FlowsSharingADownlinkSplitThePayloadRate) {
  // Two warm flows into one host: 2S through the receiver's link at B * 1448/1514.
  const double B = 12.5e6, L = 1e-3, S = 8 * kMiB;
  StepGraph g(3);
  g.add_transfer(1, 0, S, {}, "kv");
  g.add_transfer(2, 0, S, {}, "kv");
  NetworkSpec net = testing::star(3, link(B, L / 2), NetworkModel::tcp);
  const double expected = L + 2 * S / (B * kTcpPayloadPerFrame);
  EXPECT_NEAR(replay(net, g).step_seconds, expected, 0.01 * expected);
}

TEST(TcpModel, RandomLossLeavesCubicPadhyesOrItsOwnRateAndBbrAllButTheRetransmittedShare) {
  const double B = 12.5e6;  // 100 Mbit/s
  TcpSettings cubic, bbr;
  cubic.send_buffer_bytes = bbr.send_buffer_bytes = 64 * kMiB;  // the window never limits here
  bbr.congestion_control = CongestionControl::bbr;
  EXPECT_NEAR(tcp_path_loss(1e-3, 2), 1 - 0.999 * 0.999, 1e-15);
  EXPECT_EQ(tcp_path_loss(0, 2), 0);
  EXPECT_EQ(tcp_loss_rate_bytes_per_s(0, B, 0.05, cubic), tcp_rate_bytes_per_s(B, 0.05, cubic));
  // Little loss on a short path: Padhye's form is Mathis's sqrt(3/(2q)) segments a round trip.
  const double q = 1e-4, rtt = 0.05;
  const double mathis = std::sqrt(1.5 / q) * kTcpMssBytes / rtt;
  ASSERT_LT(mathis, B);
  EXPECT_NEAR(tcp_loss_rate_bytes_per_s(q, B, rtt, cubic), mathis, 2e-3 * mathis);
  // 2 % at 50 ms: timeouts count (rto 0.25 s), 1448 / (0.05 sqrt(0.04/3) + 0.25 * 3 sqrt(0.0075) * 0.02 * 1.0128).
  const double padhye = 1448 / (0.05 * std::sqrt(0.02 * 2 / 3) + 0.25 * 3 * std::sqrt(0.0075) * 0.02 * (1 + 32 * 4e-4));
  EXPECT_NEAR(tcp_loss_rate_bytes_per_s(0.02, B, 0.05, cubic), padhye, 1e-9 * padhye);
  // At 200 ms and q = 2e-4 cubic's own window is the larger: 1.054 (1000)^0.75 = 187 segments.
  const double own = std::pow(0.4 * 3.7 / 1.2, 0.25) * std::pow(0.2 / 2e-4, 0.75) * kTcpMssBytes / 0.2;
  EXPECT_GT(own, std::sqrt(1.5 / 2e-4) * kTcpMssBytes / 0.2);
  EXPECT_NEAR(tcp_loss_rate_bytes_per_s(2e-4, B, 0.2, cubic), own, 1e-9 * own);
  // Never above the line.
  EXPECT_EQ(tcp_loss_rate_bytes_per_s(1e-9, B, 0.05, cubic), B * kTcpPayloadPerFrame);
  EXPECT_NEAR(tcp_loss_rate_bytes_per_s(2e-3, B, 0.05, bbr), (1 - 2e-3) * B * kTcpPayloadPerFrame, 1e-6);
}

TEST(SimgridConfig, PassesThroughAfterTheModelAndRefusalsNameTheKey) {
  // ideal has no window cap; a 64 KiB TCP-gamma over a 40 ms round trip caps the flow
  // at 64 KiB / 40 ms = 1.6 MB/s, so 8 MiB takes about 5.2 s instead of 0.09 s.
  NetworkSpec net = testing::star(2, link(125e6, 0.010));
  const double free_s = replay_p2p(net, 8 * kMiB);
  net.simgrid_config = {{"network/TCP-gamma", "65536"}};
  EXPECT_NE(describe(net).find("SimGrid config network/TCP-gamma=65536"), std::string::npos) << describe(net);
  const double capped = replay_p2p(net, 8 * kMiB);
  EXPECT_LT(free_s, 0.1);
  EXPECT_NEAR(capped, 0.020 + 8 * kMiB / (65536 / 0.040), 0.01 * capped);
  net.simgrid_config = {{"network/no-such-setting", "1"}};
  try {
    replay_p2p(net, 1);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "network.simgrid.network/no-such-setting");
  }
}

}  // namespace
}  // namespace lowband::sim
