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
// window: then the first window leaves at the line rate and the rest at one window per
// round trip, S / message_rate = W / (B * 1448/1514) + (S - W) * 2L / W. And
// `startup` the connection's cost before its window covers the path: a handshake
// round trip when it opens, then slow-start rounds (the window doubles each round
// trip from 10 segments until the congestion control leaves slow start). A warm
// connection (window already open) has no startup. State is per connection, so a
// link or connection that changes later (time-varying links) changes only itself.
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

// The window where slow start ends, as a fraction of the path's pipe (rate * rtt):
// bbr's startup fills the pipe; cubic's HyStart leaves early and then grows slowly.
double tcp_slow_start_exit_fraction(CongestionControl cc);

struct TcpConnection {
  bool open = false;         // handshake done
  double window_bytes = 0;   // congestion window reached so far
};

// A connection as `connections` says it starts: warm is open with an unbounded window.
TcpConnection tcp_initial_connection(ConnectionState connections);

// Seconds beyond L + S/rate that sending `bytes` on `conn` costs (handshake and slow
// start); advances conn to the window the message leaves behind.
double tcp_startup_seconds(double bytes, double rate_bytes_per_s, double rtt_s, CongestionControl cc,
                           TcpConnection& conn);

// The whole closed form for one message alone on its path; advances conn:
// max(L + S / message_rate + startup, S / steady rate).
double tcp_message_seconds(double bytes, double bottleneck_bytes_per_s, double latency_s, const TcpSettings& tcp,
                           TcpConnection& conn);

}  // namespace lowband::sim
