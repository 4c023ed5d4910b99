#pragma once
// The `tcp` network model's closed-form pieces, fitted to real Linux TCP over the
// emulated links of scripts/testbed (data and fit: analysis/network-fidelity/).
//
// A message of S bytes on a path of one-way latency L (the sum of its links'
// latencies; round trip 2L) and bottleneck link rate B takes, alone on its path,
//   L + S / message_rate + startup
// where message_rate is B * 1448/1514 (TCP payload per Ethernet frame: MSS 1448 with
// timestamps, 1514 bytes on the wire) unless the window (the bytes in flight a send
// buffer allows) is smaller than the path's pipe and the message larger than the
// window: then it leaves in bursts of one window per round trip, each at the line
// rate, S / message_rate = (k - 1) * 2L + (S - (k - 1) * W) / (B * 1448/1514) with
// k = ceil(S / W) (the window's acknowledgements clock out the next burst). And
// `startup` the connection's cost before its window covers the path: a handshake
// round trip when it opens, then slow-start rounds (the window doubles each round
// trip from 10 segments until the congestion control leaves slow start). A warm
// connection (window already open) has no startup. State is per connection, so a
// link or connection that changes later (time-varying links) changes only itself.
//
// Two more patterns of one connection (analysis/network-fidelity/tcp-states.md):
//  - idle restart: a connection that sent nothing for longer than its RTO restarts
//    slow start from a smaller window (Linux tcp_slow_start_after_idle, on by
//    default; tcp_window_after_idle_bytes). `idle` connections start a replay so.
//  - a backlog: a message written while the connection still sends an earlier one
//    follows its bytes; it arrives when the whole backlog, sent as one message, would
//    (tcp_backlog_increment_seconds).
#include <limits>

#include "sim/network.h"

namespace lowband::sim {

inline constexpr double kTcpMssBytes = 1448;
inline constexpr double kTcpFrameBytes = 1514;
inline constexpr double kTcpPayloadPerFrame = kTcpMssBytes / kTcpFrameBytes;  // 0.956
inline constexpr double kTcpInitialWindowBytes = 10 * kTcpMssBytes;             // Linux IW10

// Bytes in flight a send buffer of send_buffer_bytes allows: Linux charges each
// buffered segment its skb's true size, so less than the buffer is data.
double tcp_window_bytes(const TcpSettings& tcp);

// Steady goodput of one flow alone on a path: min(B * 1448/1514, window / rtt).
double tcp_rate_bytes_per_s(double bottleneck_bytes_per_s, double rtt_s, const TcpSettings& tcp);

// Average goodput of one message of `bytes` alone on a path (message_rate above).
double tcp_message_rate_bytes_per_s(double bytes, double bottleneck_bytes_per_s, double rtt_s,
                                    const TcpSettings& tcp);

// S / steady rate - S / message_rate: what the first window at line rate saves over a
// message streamed at window / rtt throughout. The simulation streams every message at
// the steady rate (SimGrid's TCP-gamma, right for flows that share links) and takes
// this off the message's latency, never below zero; hence the max in
// tcp_message_seconds.
double tcp_first_window_bonus_seconds(double bytes, double bottleneck_bytes_per_s, double rtt_s,
                                      const TcpSettings& tcp);

// Random loss. A path of `links` links that each drop a fraction p of their packets
// drops 1 - (1 - p)^links of a flow's.
double tcp_path_loss(double link_loss, int links);
// The goodput random loss leaves one flow alone on a path that drops `path_loss` (q)
// of its packets, round trip rtt (checked on the testbed: analysis/network-fidelity/loss.md).
//  - cubic: the larger of its Reno-friendly rate and its own. Reno-friendly: Padhye
//    et al. (1998), MSS / (rtt sqrt(2q/3) + rto min(1, 3 sqrt(3q/8)) q (1 + 32 q²)),
//    with one ACK per segment (Linux counts the segments an ACK covers) and rto =
//    tcp_rto_seconds(rtt); without timeouts (small q) it is Mathis et al.'s (1997)
//    sqrt(3/(2q)) segments per round trip. Its own: an average window of
//    (C (3 + b) / (4 (1 - b)))^(1/4) (rtt / q)^(3/4) segments with C 0.4 and b 0.7
//    (RFC 8312 §5.1, rtt in seconds), larger on long paths with little loss.
//  - bbr (v1, Linux's): does not slow down for random loss this low; only the
//    retransmitted share is lost, (1 - q) × the rate without loss.
// Never above the rate without loss; that rate itself when q is 0.
double tcp_loss_rate_bytes_per_s(double path_loss, double bottleneck_bytes_per_s, double rtt_s,
                                 const TcpSettings& tcp);

// The window where slow start ends, as a fraction of the path's pipe (rate * rtt):
// bbr's startup fills the pipe; cubic's HyStart leaves early and then grows slowly.
double tcp_slow_start_exit_fraction(CongestionControl cc);

struct TcpConnection {
  bool open = false;         // handshake done
  double window_bytes = 0;   // congestion window reached so far
  bool restarts_after_idle = false;  // tcp_slow_start_after_idle applies (fresh, idle)
  // When its last byte left the sender, on the replay's clock: -inf for `idle` (idle
  // since long before), NaN while unknown (no restart before the first message).
  double last_departure_s = std::numeric_limits<double>::quiet_NaN();
  double backlog_bytes = 0;  // bytes of the back-to-back run its last message ended
};

// A connection as `connections` says it starts: warm is open with an unbounded window
// and never restarts (tcp_slow_start_after_idle=0, or traffic that never pauses an
// RTO); idle is open, idle since long before (cubic: window back to 10 segments; bbr
// keeps it, see tcp_window_after_idle_bytes); fresh is closed.
TcpConnection tcp_initial_connection(ConnectionState connections,
                                     CongestionControl cc = CongestionControl::cubic);

// Linux's retransmission timeout on a steady path: srtt + rttvar, where rttvar is held
// at least tcp_rto_min (200 ms), so rtt + 0.2 s (tcp_rtt_estimator, __tcp_set_rto).
inline constexpr double kTcpMinRtoSeconds = 0.2;
double tcp_rto_seconds(double rtt_s);

// The window after `idle_s` seconds without sending (Linux tcp_cwnd_restart): past one
// RTO it halves once per further RTO elapsed, ceil(idle/rto) - 1 times, never below
// min(10 segments, window). A warm window is taken to be the pipe at the line rate
// (pipe_bytes = B * 1448/1514 * rtt), so it halves from min(window, pipe): cubic's
// window is not held to the send buffer, only what it sends is (ss -ti, 1 Gbit/s,
// 25 ms, 4 MiB buffer: 5808 segments, 8.4 MB). bbr keeps its window: Linux skips the
// restart for a congestion control with its own cong_control
// (tcp_slow_start_after_idle_check).
double tcp_window_after_idle_bytes(double window_bytes, double pipe_bytes, double idle_s, double rtt_s,
                                   CongestionControl cc);

// A warm connection's arrival time for `bytes` sent as one message, without startup:
// max(L + S / message_rate, S / steady rate), tcp_message_seconds on a warm connection.
double tcp_warm_message_seconds(double bytes, double bottleneck_bytes_per_s, double latency_s, const TcpSettings& tcp);

// What a message of `bytes` written while its connection still sends `backlog_bytes`
// (written before it, back to back) adds to the backlog's arrival: the backlog and the
// message leave as one stream, T(backlog + bytes) - T(backlog), T the warm message time
// in a window of min(W, max(10 segments, backlog)) for cubic (its window grew only as
// far as the bursts it carried; the rest waits for the backlog's ACKs), W for bbr.
double tcp_backlog_increment_seconds(double backlog_bytes, double bytes, double bottleneck_bytes_per_s,
                                     double latency_s, const TcpSettings& tcp);

// Seconds beyond L + S/rate that sending `bytes` on `conn` costs (handshake and slow
// start); advances conn to the window the message leaves behind.
double tcp_startup_seconds(double bytes, double rate_bytes_per_s, double rtt_s, CongestionControl cc,
                           TcpConnection& conn);

// The whole closed form for one message alone on its path; advances conn:
// max(L + S / message_rate + startup, S / steady rate).
double tcp_message_seconds(double bytes, double bottleneck_bytes_per_s, double latency_s, const TcpSettings& tcp,
                           TcpConnection& conn);

}  // namespace lowband::sim
