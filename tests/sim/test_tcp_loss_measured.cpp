// The loss closed forms of sim/tcp_model.h against real Linux TCP on the testbed with
// random loss (analysis/network-fidelity/loss.csv, scripts/testbed/measure.py loss):
// each case's median message time against L + S / tcp_loss_rate_bytes_per_s. Prints
// the table analysis/network-fidelity/loss.md quotes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "sim/tcp_model.h"

namespace lowband::sim {
namespace {

struct Case {
  double rate_mbit, path_delay_ms, sndbuf, link_loss;
  std::string cc;
  double size;
  bool operator<(const Case& o) const {
    return std::tie(path_delay_ms, link_loss, cc, rate_mbit, sndbuf, size) <
           std::tie(o.path_delay_ms, o.link_loss, o.cc, o.rate_mbit, o.sndbuf, o.size);
  }
};

std::map<Case, std::vector<double>> measured() {
  std::ifstream in(std::string(LOWBAND_SOURCE_DIR) + "/analysis/network-fidelity/loss.csv");
  std::map<Case, std::vector<double>> out;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::vector<std::string> f;
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    if (f.size() < 8) continue;
    const Case c{std::stod(f[0]), std::stod(f[1]), std::stod(f[2]), std::stod(f[3]), f[4], std::stod(f[5])};
    out[c].push_back(std::stod(f[7]));
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The cases the closed forms miss by more than 10 %, each with how far and why
// (analysis/network-fidelity/loss.md): held to that, so a change that makes them
// worse, or any other case's miss, fails here.
struct Miss {
  double path_delay_ms, link_loss;
  const char* cc;
  double at_most;
  const char* why;
};
const Miss kKnownMisses[] = {
    {100, 0.0001, "cubic", 0.30,
     "RFC 8312's average window (187 segments at 200 ms and 0.02 %) is below Linux cubic's measured 238"},
    {100, 0.001, "bbr", 0.15, "bbr v1 loses more than its retransmissions at 200 ms (recovery rounds)"},
    {100, 0.01, "bbr", 0.20, "bbr v1 loses more than its retransmissions at 200 ms (recovery rounds)"},
};

// The closed forms are steady rates: a cubic message that sees fewer loss events than
// this is printed, not held to them (its rate depends on where its few losses fall).
constexpr double kSteadyLossEvents = 8;

TEST(TcpLossMeasured, EverySteadyMedianIsNearItsClosedForm) {
  const auto cases = measured();
  ASSERT_GE(cases.size(), 12u) << "2 path delays x 3 loss rates x cubic and bbr";
  int steady = 0, within_10 = 0;
  double worst = 0;
  std::printf("| path one way | loss per link | cc | message | loss events | runs | measured (median) | model | "
              "model / measured |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& [c, seconds] : cases) {
    TcpSettings tcp;
    tcp.send_buffer_bytes = c.sndbuf;
    tcp.congestion_control = c.cc == "bbr" ? CongestionControl::bbr : CongestionControl::cubic;
    const double L = c.path_delay_ms / 1e3, B = c.rate_mbit * 1e6 / 8;
    // Data crosses two lossy links (the sender's uplink, the receiver's downlink).
    const double q = tcp_path_loss(c.link_loss, 2);
    const double model = L + c.size / tcp_loss_rate_bytes_per_s(q, B, 2 * L, tcp);
    const double m = median(seconds);
    const double ratio = model / m;
    const double events = c.size / kTcpMssBytes * q;
    const bool held = c.cc == "bbr" || events >= kSteadyLossEvents;
    std::printf("| %g ms | %g %% | %s | %g MiB | %.1f%s | %zu | %.2f s | %.2f s | %.2f |\n", c.path_delay_ms,
                100 * c.link_loss, c.cc.c_str(), c.size / 1048576, events, held ? "" : " (short)", seconds.size(), m,
                model, ratio);
    if (!held) continue;
    ++steady;
    within_10 += std::abs(ratio - 1) <= 0.10;
    worst = std::max(worst, std::abs(ratio - 1));
    double allowed = 0.10;
    for (const Miss& miss : kKnownMisses)
      if (miss.path_delay_ms == c.path_delay_ms && miss.link_loss == c.link_loss && c.cc == miss.cc)
        allowed = miss.at_most;
    EXPECT_NEAR(ratio, 1.0, allowed) << c.cc << " at " << c.link_loss << " per link, " << c.path_delay_ms << " ms";
  }
  std::printf("\n%d of %d steady cases within 10 %%; the worst %.1f %% off\n", within_10, steady, 100 * worst);
  EXPECT_GE(steady, 12);
}

}  // namespace
}  // namespace lowband::sim
