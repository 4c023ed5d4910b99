#include "sim/network.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace lowband::sim {

const Words<NetworkModel>& network_model_words() {
  static const Words<NetworkModel> words = {{"ideal", NetworkModel::ideal}, {"tcp", NetworkModel::tcp}};
  return words;
}

const Words<Topology>& topology_words() {
  static const Words<Topology> words = {{"star", Topology::star}, {"full_mesh", Topology::full_mesh},
                                        {"clusters", Topology::clusters}, {"explicit", Topology::explicit_links}};
  return words;
}

const Words<CongestionControl>& congestion_control_words() {
  static const Words<CongestionControl> words = {{"cubic", CongestionControl::cubic}, {"bbr", CongestionControl::bbr}};
  return words;
}

const Words<ConnectionState>& connection_state_words() {
  static const Words<ConnectionState> words = {
      {"warm", ConnectionState::warm}, {"fresh", ConnectionState::fresh}, {"idle", ConnectionState::idle}};
  return words;
}

const Words<MessageOrder>& message_order_words() {
  static const Words<MessageOrder> words = {
      {"concurrent", MessageOrder::concurrent}, {"fifo", MessageOrder::fifo}, {"connection", MessageOrder::connection}};
  return words;
}

const char* to_string(NetworkModel model) { return word_of(network_model_words(), model).c_str(); }

// Named as the code names it (describe()), not as a scenario spells it ("explicit").
const char* to_string(Topology topology) {
  return topology == Topology::explicit_links ? "explicit_links" : word_of(topology_words(), topology).c_str();
}

const char* to_string(CongestionControl cc) { return word_of(congestion_control_words(), cc).c_str(); }

const char* to_string(ConnectionState connections) { return word_of(connection_state_words(), connections).c_str(); }

namespace {

// Bandwidth in bits per second, as network people write it ("300 Mbps").
std::string format_bandwidth(double bytes_per_s) {
  const double bits = bytes_per_s * 8;
  const char* unit = "bps";
  double value = bits;
  if (bits >= 1e12) { value = bits / 1e12; unit = "Tbps"; }
  else if (bits >= 1e9) { value = bits / 1e9; unit = "Gbps"; }
  else if (bits >= 1e6) { value = bits / 1e6; unit = "Mbps"; }
  else if (bits >= 1e3) { value = bits / 1e3; unit = "Kbps"; }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g %s", value, unit);
  return buf;
}

std::string format_latency(double seconds) {
  const char* unit = "s";
  double value = seconds;
  if (seconds == 0) { unit = "s"; }
  else if (seconds < 1e-6) { value = seconds * 1e9; unit = "ns"; }
  else if (seconds < 1e-3) { value = seconds * 1e6; unit = "us"; }
  else if (seconds < 1) { value = seconds * 1e3; unit = "ms"; }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g %s", value, unit);
  return buf;
}

std::string format_link(const Link& link) {
  if (link.upload() != link.bandwidth_bytes_per_s)  // an asymmetric access link
    return format_bandwidth(link.bandwidth_bytes_per_s) + " down, " + format_bandwidth(link.upload()) + " up / " +
           format_latency(link.latency_s);
  return format_bandwidth(link.bandwidth_bytes_per_s) + " / " + format_latency(link.latency_s);
}

std::string plural(size_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

}  // namespace

std::string describe(const NetworkSpec& network) {
  std::string out = std::string(to_string(network.topology)) + ", " + plural(network.nodes, "node");
  switch (network.topology) {
    case Topology::star:
      out += ", " + format_link(network.link) + " per access link (path latency " +
             format_latency(2 * network.link.latency_s) + ")";
      if (!network.node_links.empty()) out += ", " + plural(network.node_links.size(), "node override");
      break;
    case Topology::full_mesh:
      out += ", " + format_link(network.link) + " per pair link (= path)";
      if (!network.pair_links.empty()) out += ", " + plural(network.pair_links.size(), "pair override");
      break;
    case Topology::clusters: {
      out += " in " + plural(network.clusters.size(), "cluster") + " (";
      for (size_t c = 0; c < network.clusters.size(); ++c) {
        if (c) out += "; ";
        out += std::to_string(network.clusters[c].nodes) + " x " + format_link(network.clusters[c].access);
      }
      out += " per access link), WAN " + format_link(network.wan) + " per link; a path adds its links' latencies";
      if (!network.node_links.empty()) out += ", " + plural(network.node_links.size(), "node override");
      if (!network.wan_links.empty()) out += ", " + plural(network.wan_links.size(), "WAN override");
      break;
    }
    case Topology::explicit_links:
      out += ", " + plural(network.pair_links.size(), "link") + " (latency per link; a path adds its links')";
      break;
  }
  out += ", model ";
  out += to_string(network.model);
  if (network.model == NetworkModel::tcp) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " (%s, send buffer %g MiB, %s connections)",
                  to_string(network.tcp.congestion_control), network.tcp.send_buffer_bytes / 1048576.0,
                  to_string(network.tcp.connections));
    out += buf;
  }
  if (!network.simgrid_config.empty()) {
    out += ", SimGrid config";
    for (const auto& [key, value] : network.simgrid_config) out += " " + key + "=" + value;
  }
  if (!network.dynamics.empty()) {
    // ", 2 network.dynamics traces (bandwidth, state)": the quantities, in the order first named.
    std::vector<std::string> quantities;
    for (const NetworkDynamic& d : network.dynamics) {
      const std::string q = to_string(d.quantity);
      if (std::find(quantities.begin(), quantities.end(), q) == quantities.end()) quantities.push_back(q);
    }
    out += ", " + std::to_string(network.dynamics.size()) + " network.dynamics trace" +
           (network.dynamics.size() == 1 ? "" : "s") + " (";
    for (size_t i = 0; i < quantities.size(); ++i) out += (i ? ", " : "") + quantities[i];
    out += ")";
  }
  if (network.restart)
    out += ", restart after a " + format_latency(network.restart->stall_timeout_seconds) + " stall (relaunch " +
           format_latency(network.restart->relaunch_seconds) + ")";
  return out;
}

}  // namespace lowband::sim
