#include "sim/tcp_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lowband::sim {

double tcp_window_bytes(const TcpSettings& tcp) {
  // Data in flight per byte of tcp_wmem's maximum, fitted to warm 64 MiB transfers at
  // 1 Gbit/s, 25 ms one-way, 4 MiB send buffer (analysis/network-fidelity/README.md):
  // cubic reached 55.7 MB/s (2.78 MB per 50 ms round trip), bbr 47 MB/s.
  const double per_buffer_byte = tcp.congestion_control == CongestionControl::cubic ? 0.66 : 0.56;
  return per_buffer_byte * tcp.send_buffer_bytes;
}

double tcp_rate_bytes_per_s(double bottleneck_bytes_per_s, double rtt_s, const TcpSettings& tcp) {
  const double line = bottleneck_bytes_per_s * kTcpPayloadPerFrame;
  if (!(rtt_s > 0)) return line;
  return std::min(line, tcp_window_bytes(tcp) / rtt_s);
}

double tcp_message_rate_bytes_per_s(double bytes, double bottleneck_bytes_per_s, double rtt_s,
                                    const TcpSettings& tcp) {
  const double line = bottleneck_bytes_per_s * kTcpPayloadPerFrame;
  const double window = tcp_window_bytes(tcp);
  if (!(rtt_s > 0) || window >= line * rtt_s || bytes <= window) return line;
  return bytes / (window / line + (bytes - window) * rtt_s / window);
}

double tcp_first_window_bonus_seconds(double bytes, double bottleneck_bytes_per_s, double rtt_s,
                                      const TcpSettings& tcp) {
  return bytes / tcp_rate_bytes_per_s(bottleneck_bytes_per_s, rtt_s, tcp) -
         bytes / tcp_message_rate_bytes_per_s(bytes, bottleneck_bytes_per_s, rtt_s, tcp);
}

double tcp_slow_start_exit_fraction(CongestionControl cc) {
  switch (cc) {
    case CongestionControl::cubic: return 1.0;
    case CongestionControl::bbr: return 1.0;
  }
  return 1.0;
}

TcpConnection tcp_initial_connection(ConnectionState connections) {
  if (connections == ConnectionState::warm) return {true, std::numeric_limits<double>::infinity()};
  return {false, 0};
}

double tcp_startup_seconds(double bytes, double rate_bytes_per_s, double rtt_s, CongestionControl cc,
                           TcpConnection& conn) {
  double t = 0;
  if (!conn.open) {
    conn.open = true;
    conn.window_bytes = kTcpInitialWindowBytes;
    t += rtt_s;  // SYN, SYN-ACK: the data leaves with the handshake's last ACK
  }
  if (!(rtt_s > 0) || !(bytes > 0)) return t;
  const double pipe = rate_bytes_per_s * rtt_s;
  const double exit_window = std::max(kTcpInitialWindowBytes, tcp_slow_start_exit_fraction(cc) * pipe);
  double w = conn.window_bytes;
  double sent = 0, elapsed = 0;  // elapsed: from the first byte sent to the last byte's departure
  while (sent < bytes) {
    if (w >= pipe) {  // the window covers the path: the rest streams at the rate
      elapsed += (bytes - sent) / rate_bytes_per_s;
      break;
    }
    if (w >= exit_window) {  // out of slow start below the pipe: one window per round trip
      const double rounds = std::ceil((bytes - sent) / w);
      elapsed += (rounds - 1) * rtt_s + ((bytes - sent) - (rounds - 1) * w) / rate_bytes_per_s;
      break;
    }
    const double chunk = std::min(w, bytes - sent);
    sent += chunk;
    if (sent >= bytes) {
      elapsed += chunk / rate_bytes_per_s;
      break;
    }
    elapsed += rtt_s;
    w = std::min(2 * w, exit_window);
  }
  conn.window_bytes = std::max(conn.window_bytes, w);
  return t + std::max(0.0, elapsed - bytes / rate_bytes_per_s);
}

double tcp_message_seconds(double bytes, double bottleneck_bytes_per_s, double latency_s, const TcpSettings& tcp,
                           TcpConnection& conn) {
  const double rtt = 2 * latency_s;
  const double rate = tcp_rate_bytes_per_s(bottleneck_bytes_per_s, rtt, tcp);
  const double t = latency_s + bytes / tcp_message_rate_bytes_per_s(bytes, bottleneck_bytes_per_s, rtt, tcp) +
                   tcp_startup_seconds(bytes, rate, rtt, tcp.congestion_control, conn);
  return std::max(t, bytes / rate);
}

}  // namespace lowband::sim
