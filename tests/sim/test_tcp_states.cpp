// The tcp model's connection states (sim/tcp_model.h): restart after idle, the `idle`
// state, a backlog of messages on one connection, and message_order "connection".
// Expected values are worked by hand in the comments (line = B * 1448/1514).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "networks.h"
#include "sim/replay.h"
#include "sim/tcp_model.h"

namespace lowband::sim {
namespace {

using testing::link;

constexpr double kMiB = 1048576;

NetworkSpec tcp_pair(double bandwidth, double path_latency, ConnectionState connections,
                     MessageOrder order = MessageOrder::concurrent) {
  NetworkSpec net = testing::star(2, link(bandwidth, path_latency / 2), NetworkModel::tcp);
  net.tcp.connections = connections;
  net.message_order = order;
  return net;
}

TEST(TcpStates, RtoIsTheRoundTripPlusLinuxMinimum) {
  // srtt + rttvar, rttvar at least tcp_rto_min: 0.05 + 0.2.
  EXPECT_DOUBLE_EQ(tcp_rto_seconds(0.05), 0.25);
  EXPECT_DOUBLE_EQ(tcp_rto_seconds(0.002), 0.202);
}

TEST(TcpStates, WindowHalvesOncePerRtoIdleDownToTenSegments) {
  // 1 Gbit/s, 25 ms one-way: rtt 0.05, rto 0.25, pipe = 125e6 * 1448/1514 * 0.05
  // = 5,977,542.93 B. A window of 8e6 B halves from min(8e6, pipe) = 5,977,542.93:
  //  idle 0.2  (< rto): unchanged, 8e6
  //  idle 0.55: ceil(0.55 / 0.25) - 1 = 2 halvings: 1,494,385.73
  //  idle 1.05: ceil(4.2) - 1 = 4 halvings: 373,596.43
  //  idle 10:   39 halvings, below 10 segments: 14,480
  const double pipe = 125e6 * 1448.0 / 1514.0 * 0.05, rtt = 0.05;
  const auto cubic = CongestionControl::cubic;
  EXPECT_DOUBLE_EQ(tcp_window_after_idle_bytes(8e6, pipe, 0.2, rtt, cubic), 8e6);
  EXPECT_NEAR(tcp_window_after_idle_bytes(8e6, pipe, 0.55, rtt, cubic), 1494385.73, 0.01);
  EXPECT_NEAR(tcp_window_after_idle_bytes(8e6, pipe, 1.05, rtt, cubic), 373596.43, 0.01);
  EXPECT_DOUBLE_EQ(tcp_window_after_idle_bytes(8e6, pipe, 10, rtt, cubic), 14480);
  // Idle for ever (the `idle` state): 10 segments; a window below that stays.
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_DOUBLE_EQ(tcp_window_after_idle_bytes(inf, pipe, inf, rtt, cubic), 14480);
  EXPECT_DOUBLE_EQ(tcp_window_after_idle_bytes(5000, pipe, 10, rtt, cubic), 5000);
  // bbr has its own cong_control: Linux does not restart it.
  EXPECT_DOUBLE_EQ(tcp_window_after_idle_bytes(8e6, pipe, 10, rtt, CongestionControl::bbr), 8e6);
}

TEST(TcpStates, IdleConnectionSlowStartsWithoutHandshake) {
  // 100 Mbit/s, 25 ms one-way, 1 MiB, 4 MiB buffer (W = 2.77 MB > pipe: rate = line).
  // line = 11,955,085.87 B/s, S / line = 0.0877096, pipe = line * 0.05 = 597,754.29.
  // Slow start from 14,480 B: windows 14480, 28960, 57920, 115840, 231680, 463360 carry
  // 912,240 B in 6 round trips (0.3 s); the window is then the pipe and the last
  // 136,336 B stream in 0.0114040 s: startup = 0.3114040 - 0.0877096 = 0.2236944.
  //   idle:  L + S / line + startup = 0.025 + 0.0877096 + 0.2236944 = 0.3364040
  //   fresh: that plus the handshake's round trip = 0.3864040
  //   warm:  0.025 + 0.0877096 = 0.1127096
  const double B = 12.5e6, L = 0.025, S = kMiB;
  TcpSettings tcp;
  TcpConnection idle = tcp_initial_connection(ConnectionState::idle);
  TcpConnection fresh = tcp_initial_connection(ConnectionState::fresh);
  TcpConnection warm = tcp_initial_connection(ConnectionState::warm);
  EXPECT_NEAR(tcp_message_seconds(S, B, L, tcp, idle), 0.3364040, 1e-6);
  EXPECT_NEAR(tcp_message_seconds(S, B, L, tcp, fresh), 0.3864040, 1e-6);
  EXPECT_NEAR(tcp_message_seconds(S, B, L, tcp, warm), 0.1127096, 1e-6);
  // bbr keeps its window through idle: an idle bbr connection is a warm one.
  TcpConnection idle_bbr = tcp_initial_connection(ConnectionState::idle, CongestionControl::bbr);
  EXPECT_NEAR(tcp_message_seconds(S, B, L, tcp, idle_bbr), 0.1127096, 1e-6);
  // The replay charges the same.
  StepGraph g(2);
  g.add_transfer(0, 1, S, {}, "kv");
  EXPECT_NEAR(replay(tcp_pair(B, L, ConnectionState::idle), g).step_seconds, 0.3364040, 1e-6);
}

TEST(TcpStates, ConnectionIdlePastItsRtoRestartsWithinAReplay) {
  // 100 Mbit/s, 25 ms, fresh: message 1 (1 MiB) takes 0.3864040 and leaves the window at
  // the pipe, 597,754.29 B; rank 0 computes `gap` seconds; then message 2 (1 MiB).
  // Message 1's last byte left L before it arrived, so the connection idles gap + L.
  //  gap 0.1: idle 0.125 < rto 0.25: message 2 is warm, 0.1127096.
  //  gap 1.0: idle 1.025: ceil(4.1) - 1 = 4 halvings, window 37,359.64 B; windows
  //    37359.6, 74719.3, 149438.6, 298877.1 carry 560,394.6 B in 4 round trips (0.2 s),
  //    then the pipe streams 488,181.4 B in 0.0408346 s: startup 0.2408346 - 0.0877096
  //    = 0.1531250; message 2 = 0.025 + 0.0877096 + 0.1531250 = 0.2658346.
  const double B = 12.5e6, L = 0.025, S = kMiB;
  for (auto [gap, second] : {std::pair{0.1, 0.1127096}, std::pair{1.0, 0.2658346}}) {
    StepGraph g(2);
    const TaskId m1 = g.add_transfer(0, 1, S, {}, "kv");
    const TaskId c = g.add_compute(0, gap, {m1}, "compute");
    g.add_transfer(0, 1, S, {c}, "kv");
    const double expected = 0.3864040 + gap + second;
    EXPECT_NEAR(replay(tcp_pair(B, L, ConnectionState::fresh), g).step_seconds, expected, 1e-6) << gap;
    // A warm connection never restarts: both messages 0.1127096.
    EXPECT_NEAR(replay(tcp_pair(B, L, ConnectionState::warm), g).step_seconds, 2 * 0.1127096 + gap, 1e-6) << gap;
  }
}

// Two messages from rank 0 to rank 1, ready at once (a "kv" one and one of
// `second_kind`): when the first and the second arrive.
std::pair<double, double> two_messages_at_once(const NetworkSpec& net, double bytes, const char* second_kind) {
  StepGraph g(2);
  const TaskId a = g.add_transfer(0, 1, bytes, {}, "kv");
  const TaskId b = g.add_transfer(0, 1, bytes, {}, second_kind);
  ReplayOptions times;
  times.task_times = true;
  const ReplayResult r = replay(net, g, times);
  const double x = r.task_finish_seconds[a], y = r.task_finish_seconds[b];
  return {std::min(x, y), std::max(x, y)};
}

TEST(TcpStates, BackToBackMessagesArriveAsOneStream) {
  // 1 Gbit/s, 25 ms, 4 MiB buffer, cubic: W = 0.66 * 4 MiB = 2,768,240.64 B, W / rtt =
  // 55,364,812.8 B/s, line = 119,550,858.65 B/s. T_w(S) = max(L + S / message_rate in a
  // window w, S / (W/rtt)); cubic's window behind a backlog B is w = min(W, max(14480, B)).
  //  1 MiB alone: T(1 MiB) = 0.025 + 0.0087710 = 0.0337710.
  //  1 MiB behind 1 MiB, cubic: w = 1 MiB; T_w(2 MiB) = 0.025 + 0.0087710 + 1 MiB * 0.05 /
  //    1 MiB = 0.0837710: the second adds a round trip, 0.05 (measured 0.0857 - 0.0349).
  //  bbr (W = 0.61 * 4 MiB = 2,558,525.4 > 2 MiB): T(2 MiB) = 0.025 + 0.0175419 =
  //    0.0425419, the second adds 0.0087710.
  //  8 MiB (w = W, 3.03 windows): one window per round trip, the fourth burst 83,886 B:
  //    T(8 MiB) = max(0.025 + 3 * 0.05 + 0.0007017, 0.1515152) = 0.1757017. As one stream
  //    T(16 MiB) = 0.025 + 6 * 0.05 + 0.0014034 = 0.3264034, an increment of 0.1507017; the
  //    replay streams the second at W / rtt (0.1515152 for 8 MiB) and no faster, so it
  //    arrives at 0.1757017 + 0.1515152 = 0.3272169 (0.8 ms after the closed form).
  const double B = 125e6, L = 0.025;
  TcpSettings tcp, bbr;
  bbr.congestion_control = CongestionControl::bbr;
  EXPECT_NEAR(tcp_backlog_increment_seconds(0, kMiB, B, L, tcp), 0.0337710, 1e-7);
  EXPECT_NEAR(tcp_backlog_increment_seconds(kMiB, kMiB, B, L, tcp), 0.05, 1e-7);
  EXPECT_NEAR(tcp_backlog_increment_seconds(kMiB, kMiB, B, L, bbr), 0.0087710, 1e-7);
  EXPECT_NEAR(tcp_backlog_increment_seconds(8 * kMiB, 8 * kMiB, B, L, tcp), 0.1507017, 1e-7);
  // The replay with one connection per pair: two 8 MiB messages ready at once arrive
  // at 0.1757017 and 0.3272169 (the second pays no latency of its own), whatever
  // their kinds (one connection).
  const NetworkSpec gigabit = tcp_pair(B, L, ConnectionState::warm, MessageOrder::connection);
  std::pair<double, double> at = two_messages_at_once(gigabit, 8 * kMiB, "grad_sync");
  EXPECT_NEAR(at.first, 0.1757017, 1e-6);
  EXPECT_NEAR(at.second, 0.3272169, 1e-6);
  // Two 1 MiB, cubic: 0.0337710 and 0.0837710 (the replay streams the second at W / rtt,
  // 0.0189398 s, after a latency phase of 0.05 - 0.0189398).
  at = two_messages_at_once(gigabit, kMiB, "kv");
  EXPECT_NEAR(at.first, 0.0337710, 1e-6);
  EXPECT_NEAR(at.second, 0.0837710, 1e-6);
  // Two 1 MiB messages at 100 Mbit/s, 25 ms (no window cap): 0.1127096 and
  // 0.025 + 2 * 0.0877096 = 0.2004192. concurrent shares the path: both 0.2004192.
  at = two_messages_at_once(tcp_pair(12.5e6, L, ConnectionState::warm, MessageOrder::connection), kMiB, "kv");
  EXPECT_NEAR(at.first, 0.1127096, 1e-6);
  EXPECT_NEAR(at.second, 0.2004192, 1e-6);
  StepGraph h(2);
  const TaskId c = h.add_transfer(0, 1, kMiB, {}, "kv");
  const TaskId d = h.add_transfer(0, 1, kMiB, {}, "kv");
  ReplayOptions times;
  times.task_times = true;
  const ReplayResult shared = replay(tcp_pair(12.5e6, L, ConnectionState::warm), h, times);
  EXPECT_NEAR(shared.task_finish_seconds[c], 0.2004192, 1e-6);
  EXPECT_NEAR(shared.task_finish_seconds[d], 0.2004192, 1e-6);
}

TEST(TcpStates, QueuedMessageReadyAfterTheTailLeftOverlapsItsLatency) {
  // 100 Mbit/s, 25 ms, warm, one connection: message 1 (1 MiB) leaves its last byte at
  // 0.0877096 and arrives at 0.1127096. Message 2 (1 MiB) is ready at 0.1 (rank 0
  // computes 0.1 s first), in between: it waits for the stream, but its bytes leave at
  // 0.1 as on a free connection and arrive at 0.1 + 0.1127096 = 0.2127096.
  StepGraph g(2);
  g.add_transfer(0, 1, kMiB, {}, "kv");
  const TaskId c = g.add_compute(0, 0.1, {}, "compute");
  g.add_transfer(0, 1, kMiB, {c}, "kv");
  EXPECT_NEAR(replay(tcp_pair(12.5e6, 0.025, ConnectionState::warm, MessageOrder::connection), g).step_seconds,
              0.2127096, 1e-6);
}

TEST(TcpStates, BbrWindowIsTheFitAcrossSizesAndDelays) {
  // W = 0.61 * 4 MiB = 2,558,525.44 B. 64 MiB at 1 Gbit/s, 25 ms: 26.23 windows, so 26
  // round trips (1.3) and a last burst of 587,202.56 B at the line rate (0.0049117): L +
  // ... = 1.3299117, above S / (W / rtt) = 67108864 * 0.05 / 2558525.44 = 1.3114754.
  // Measured 1.2523 (tcp-states.csv) and 1.4453 (p2p.csv), cubic 1.2172.
  TcpSettings bbr;
  bbr.congestion_control = CongestionControl::bbr;
  EXPECT_NEAR(tcp_window_bytes(bbr), 2558525.44, 1e-6);
  TcpConnection warm = tcp_initial_connection(ConnectionState::warm);
  EXPECT_NEAR(tcp_message_seconds(64 * kMiB, 125e6, 0.025, bbr, warm), 1.3299117, 1e-6);
}

}  // namespace
}  // namespace lowband::sim
