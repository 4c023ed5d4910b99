#pragma once
// The `tcp` network model's closed-form pieces, fitted to real Linux TCP over the
// emulated links of scripts/testbed (data and fit: analysis/network-fidelity/).
//
// A message of S bytes on a path of one-way latency L (the sum of its links'
// latencies; round trip 2L) and bottleneck link rate B takes, alone on its path,
//   L + S / rate + startup,   rate = min(B * 1448/1514, window / 2L)
// where 1448/1514 is TCP payload per Ethernet frame (MSS 1448 with timestamps, 1514
// bytes on the wire), `window` the bytes in flight a send buffer allows, and
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

// Goodput of one flow alone on a path: min(B * 1448/1514, window / rtt).
double tcp_rate_bytes_per_s(double bottleneck_bytes_per_s, double rtt_s, const TcpSettings& tcp);

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

// The whole closed form for one message alone on its path; advances conn.
double tcp_message_seconds(double bytes, double bottleneck_bytes_per_s, double latency_s, const TcpSettings& tcp,
                           TcpConnection& conn);

}  // namespace lowband::sim
