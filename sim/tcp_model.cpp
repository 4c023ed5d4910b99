#include "sim/tcp_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace lowband::sim {

namespace {

// From a warm message's first byte leaving to its last: at the line rate, or, where
// the window cannot fill the pipe, in bursts of one window per round trip (the
// acknowledgements of a burst clock out the next): every window but the last costs a
// round trip, the last part goes at the line rate. (A fluid rate of window / rtt
// after the first window made a message of 1.3 windows a quarter round trip too fast:
// the ring collectives at 1 Gbit/s, 10 ms, analysis/network-fidelity/train-step.md.)
double sending_seconds(double bytes, double line, double rtt, double window) {
  if (!(rtt > 0) || window >= line * rtt || bytes <= window) return bytes / line;
  const double rounds = std::ceil(bytes / window) - 1;
  return rounds * rtt + (bytes - rounds * window) / line;
}

}  // namespace

double tcp_window_bytes(const TcpSettings& tcp) {
  // Data in flight per byte of tcp_wmem's maximum, fitted to warm transfers where the
  // buffer is the limit (1 Gbit/s, 10 and 25 ms one-way, 4 MiB send buffer): cubic
  // reached 55.7 MB/s on 64 MiB (2.78 MB per 50 ms round trip). bbr: 0.61 is the fit
  // to 8-64 MiB at 10 and 25 ms over two campaigns (p2p.csv: 47 MB/s on 64 MiB, i.e.
  // 0.56; tcp-states.csv: 54.7 MB/s, 0.65, and 0.55-0.63 on 8-32 MiB), within 10 % of
  // 12 of 14 medians (analysis/network-fidelity/tcp-states.md).
  const double per_buffer_byte = tcp.congestion_control == CongestionControl::cubic ? 0.66 : 0.61;
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
  return bytes / sending_seconds(bytes, line, rtt_s, window);
}

double tcp_first_window_bonus_seconds(double bytes, double bottleneck_bytes_per_s, double rtt_s,
                                      const TcpSettings& tcp) {
  return bytes / tcp_rate_bytes_per_s(bottleneck_bytes_per_s, rtt_s, tcp) -
         bytes / tcp_message_rate_bytes_per_s(bytes, bottleneck_bytes_per_s, rtt_s, tcp);
}

double tcp_path_loss(double link_loss, int links) {
  return link_loss > 0 && links > 0 ? 1 - std::pow(1 - link_loss, links) : 0.0;
}

double tcp_loss_rate_bytes_per_s(double path_loss, double bottleneck_bytes_per_s, double rtt_s,
                                 const TcpSettings& tcp) {
  const double lossless = tcp_rate_bytes_per_s(bottleneck_bytes_per_s, rtt_s, tcp);
  const double q = path_loss;
  if (!(q > 0) || !(rtt_s > 0)) return lossless;
  if (tcp.congestion_control == CongestionControl::bbr) return (1 - q) * lossless;
  const double reno_seconds_per_segment =
      rtt_s * std::sqrt(2 * q / 3) +
      tcp_rto_seconds(rtt_s) * std::min(1.0, 3 * std::sqrt(3 * q / 8)) * q * (1 + 32 * q * q);
  const double cubic_segments = std::pow(0.4 * 3.7 / 1.2, 0.25) * std::pow(rtt_s / q, 0.75);
  return std::min(lossless, std::max(kTcpMssBytes / reno_seconds_per_segment, cubic_segments * kTcpMssBytes / rtt_s));
}

double tcp_slow_start_exit_fraction(CongestionControl cc) {
  switch (cc) {
    case CongestionControl::cubic: return 1.0;
    case CongestionControl::bbr: return 1.0;
  }
  return 1.0;
}

TcpConnection tcp_initial_connection(ConnectionState connections, CongestionControl cc) {
  const double inf = std::numeric_limits<double>::infinity();
  TcpConnection conn;
  switch (connections) {
    case ConnectionState::warm: conn.open = true, conn.window_bytes = inf; break;
    case ConnectionState::idle:
      conn.open = true, conn.restarts_after_idle = true, conn.last_departure_s = -inf;
      conn.window_bytes = cc == CongestionControl::bbr ? inf : kTcpInitialWindowBytes;  // idle for ever
      break;
    case ConnectionState::fresh: conn.restarts_after_idle = true; break;
  }
  return conn;
}

double tcp_rto_seconds(double rtt_s) { return rtt_s + kTcpMinRtoSeconds; }

double tcp_window_after_idle_bytes(double window_bytes, double pipe_bytes, double idle_s, double rtt_s,
                                   CongestionControl cc) {
  const double rto = tcp_rto_seconds(rtt_s);
  if (cc == CongestionControl::bbr || !(idle_s > rto)) return window_bytes;
  const double restart = std::min(kTcpInitialWindowBytes, window_bytes);
  // while ((idle -= rto) > 0 && cwnd > restart) cwnd >>= 1;  capped: ldexp's exponent is an int
  const double halvings = std::min(std::ceil(idle_s / rto) - 1, 2000.0);
  return std::max(restart, std::ldexp(std::min(window_bytes, pipe_bytes), -static_cast<int>(halvings)));
}

namespace {

// max(L + S / message_rate, S / steady rate): one burst of window_bytes per round
// trip (sending_seconds); never before the steady rate (the window
// cap, tcp_rate_bytes_per_s) would deliver them, as the replay streams at that rate.
double warm_seconds_in_window(double bytes, double bottleneck_bytes_per_s, double latency_s, double window_bytes,
                              const TcpSettings& tcp) {
  const double line = bottleneck_bytes_per_s * kTcpPayloadPerFrame, rtt = 2 * latency_s;
  return std::max(latency_s + sending_seconds(bytes, line, rtt, window_bytes),
                  bytes / tcp_rate_bytes_per_s(bottleneck_bytes_per_s, rtt, tcp));
}

}  // namespace

double tcp_warm_message_seconds(double bytes, double bottleneck_bytes_per_s, double latency_s, const TcpSettings& tcp) {
  return warm_seconds_in_window(bytes, bottleneck_bytes_per_s, latency_s, tcp_window_bytes(tcp), tcp);
}

double tcp_backlog_increment_seconds(double backlog_bytes, double bytes, double bottleneck_bytes_per_s,
                                     double latency_s, const TcpSettings& tcp) {
  if (!(backlog_bytes > 0)) return tcp_warm_message_seconds(bytes, bottleneck_bytes_per_s, latency_s, tcp);
  // cubic grows its window only while the window is the limit, so a connection that
  // carried bursts of backlog_bytes has about that much open (1 MiB written twice at
  // 1 Gbit/s, 25 ms: the second left a round trip after the first, 0.0857 s measured);
  // bbr's window is twice its bandwidth-delay estimate, not what the sender used.
  double window = tcp_window_bytes(tcp);
  if (tcp.congestion_control == CongestionControl::cubic)
    window = std::min(window, std::max(kTcpInitialWindowBytes, backlog_bytes));
  return warm_seconds_in_window(backlog_bytes + bytes, bottleneck_bytes_per_s, latency_s, window, tcp) -
         warm_seconds_in_window(backlog_bytes, bottleneck_bytes_per_s, latency_s, window, tcp);
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
