#include "sim/collectives.h"

#include <algorithm>

#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

#include "sim/tcp_model.h"

namespace lowband::sim {

const char* to_string(Collective collective) {
  switch (collective) {
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_to_all: return "all_to_all";
    case Collective::p2p: return "p2p";
    case Collective::incast: return "incast";
  }
  return "?";
}

const Words<AllReduceAlgorithm>& all_reduce_algorithm_words() {
  static const Words<AllReduceAlgorithm> words = {{"ring", AllReduceAlgorithm::ring}, {"direct", AllReduceAlgorithm::direct}};
  return words;
}

const char* to_string(AllReduceAlgorithm algorithm) { return word_of(all_reduce_algorithm_words(), algorithm).c_str(); }

namespace {

void check_args(const char* what, const std::vector<int>& ranks, double total_bytes, const RankDeps& after) {
  const std::string name = std::string("sim::") + what + ": ";
  if (ranks.empty()) throw std::invalid_argument(name + "no ranks");
  if (std::set<int>(ranks.begin(), ranks.end()).size() != ranks.size())
    throw std::invalid_argument(name + "a rank is listed twice");
  if (!(total_bytes >= 0) || !std::isfinite(total_bytes))
    throw std::invalid_argument(name + "total_bytes must be finite and >= 0");
  if (!after.empty() && after.size() != ranks.size())
    throw std::invalid_argument(name + "after has " + std::to_string(after.size()) + " lists for " +
                                std::to_string(ranks.size()) + " ranks");
}

std::vector<TaskId> deps_of(const RankDeps& after, size_t i) { return after.empty() ? std::vector<TaskId>{} : after[i]; }

// p-1 ring rounds of chunk bytes each (all-gather and reduce-scatter move the same).
std::vector<TaskId> ring_rounds(StepGraph& graph, const std::vector<int>& ranks, double chunk_bytes,
                                const RankDeps& after, const std::string& kind_tag) {
  const size_t p = ranks.size();
  std::vector<TaskId> last_send(p, -1), last_recv(p, -1);
  for (size_t round = 0; round + 1 < p; ++round) {
    std::vector<TaskId> recv(p, -1);
    for (size_t i = 0; i < p; ++i) {
      const size_t next = (i + 1) % p;
      std::vector<TaskId> deps = round == 0 ? deps_of(after, i) : std::vector<TaskId>{last_recv[i], last_send[i]};
      last_send[i] = graph.add_transfer(ranks[i], ranks[next], chunk_bytes, std::move(deps), kind_tag);
      recv[next] = last_send[i];
    }
    last_recv = recv;
  }
  std::vector<TaskId> joins(p);
  for (size_t i = 0; i < p; ++i)
    joins[i] = graph.add_compute(ranks[i], 0, p == 1 ? deps_of(after, i) : std::vector<TaskId>{last_recv[i], last_send[i]},
                                 kind_tag);
  return joins;
}

// A second phase's start dependencies: each participant after its own join of the first.
RankDeps each_after(const std::vector<TaskId>& joins) {
  RankDeps then;
  for (TaskId id : joins) then.push_back({id});
  return then;
}

}  // namespace

std::vector<TaskId> ring_all_gather(StepGraph& graph, const std::vector<int>& ranks, double total_bytes,
                                    const RankDeps& after, const std::string& kind_tag) {
  check_args("ring_all_gather", ranks, total_bytes, after);
  return ring_rounds(graph, ranks, total_bytes / static_cast<double>(ranks.size()), after, kind_tag);
}

std::vector<TaskId> ring_reduce_scatter(StepGraph& graph, const std::vector<int>& ranks, double total_bytes,
                                        const RankDeps& after, const std::string& kind_tag) {
  check_args("ring_reduce_scatter", ranks, total_bytes, after);
  return ring_rounds(graph, ranks, total_bytes / static_cast<double>(ranks.size()), after, kind_tag);
}

std::vector<TaskId> ring_all_reduce(StepGraph& graph, const std::vector<int>& ranks, double total_bytes,
                                    const RankDeps& after, const std::string& kind_tag) {
  check_args("ring_all_reduce", ranks, total_bytes, after);
  const std::vector<TaskId> reduced = ring_reduce_scatter(graph, ranks, total_bytes, after, kind_tag);
  return ring_all_gather(graph, ranks, total_bytes, each_after(reduced), kind_tag);
}

std::vector<TaskId> all_to_all(StepGraph& graph, const std::vector<int>& ranks, double total_bytes,
                               const RankDeps& after, const std::string& kind_tag) {
  check_args("all_to_all", ranks, total_bytes, after);
  const size_t p = ranks.size();
  const double block_bytes = total_bytes / static_cast<double>(p);
  std::vector<std::vector<TaskId>> done(p);  // each rank's sends and receives
  for (size_t i = 0; i < p; ++i)
    for (size_t j = 0; j < p; ++j) {
      if (i == j) continue;
      const TaskId t = graph.add_transfer(ranks[i], ranks[j], block_bytes, deps_of(after, i), kind_tag);
      done[i].push_back(t);
      done[j].push_back(t);
    }
  std::vector<TaskId> joins(p);
  for (size_t i = 0; i < p; ++i)
    joins[i] = graph.add_compute(ranks[i], 0, p == 1 ? deps_of(after, i) : done[i], kind_tag);
  return joins;
}

std::vector<TaskId> direct_all_reduce(StepGraph& graph, const std::vector<int>& ranks, double total_bytes,
                                      const RankDeps& after, const std::string& kind_tag) {
  check_args("direct_all_reduce", ranks, total_bytes, after);
  // Each rank's join of the first all-to-all waits for every block it receives:
  // the sum of its block is then complete, and its second all-to-all sends it.
  const std::vector<TaskId> reduced = all_to_all(graph, ranks, total_bytes, after, kind_tag);
  return all_to_all(graph, ranks, total_bytes, each_after(reduced), kind_tag);
}

std::vector<TaskId> all_reduce(StepGraph& graph, AllReduceAlgorithm algorithm, const std::vector<int>& ranks,
                               double total_bytes, const RankDeps& after, const std::string& kind_tag) {
  return algorithm == AllReduceAlgorithm::direct ? direct_all_reduce(graph, ranks, total_bytes, after, kind_tag)
                                                 : ring_all_reduce(graph, ranks, total_bytes, after, kind_tag);
}

std::vector<TaskId> point_to_point(StepGraph& graph, const std::vector<int>& ranks, double total_bytes,
                                   const RankDeps& after, const std::string& kind_tag) {
  check_args("point_to_point", ranks, total_bytes, after);
  if (ranks.size() != 2) throw std::invalid_argument("sim::point_to_point: needs exactly two ranks");
  const TaskId t = graph.add_transfer(ranks[0], ranks[1], total_bytes, deps_of(after, 0), kind_tag);
  std::vector<TaskId> dst_deps = deps_of(after, 1);
  dst_deps.push_back(t);
  return {graph.add_compute(ranks[0], 0, {t}, kind_tag), graph.add_compute(ranks[1], 0, dst_deps, kind_tag)};
}

std::vector<TaskId> incast(StepGraph& graph, const std::vector<int>& ranks, double total_bytes, const RankDeps& after,
                           const std::string& kind_tag) {
  check_args("incast", ranks, total_bytes, after);
  const size_t p = ranks.size();
  std::vector<std::vector<TaskId>> done(p);
  for (size_t i = 1; i < p; ++i) {
    const TaskId t = graph.add_transfer(ranks[i], ranks[0], total_bytes, deps_of(after, i), kind_tag);
    done[0].push_back(t);
    done[i].push_back(t);
  }
  std::vector<TaskId> joins(p);
  for (size_t i = 0; i < p; ++i)
    joins[i] = graph.add_compute(ranks[i], 0, p == 1 ? deps_of(after, i) : done[i], kind_tag);
  return joins;
}

std::vector<TaskId> relay_all_gather(StepGraph& graph, const std::vector<int>& ranks, int relay, double total_bytes,
                                     const RankDeps& after, const std::string& kind_tag) {
  check_args("relay_all_gather", ranks, total_bytes, after);
  if (std::find(ranks.begin(), ranks.end(), relay) != ranks.end())
    throw std::invalid_argument("sim::relay_all_gather: the relay " + std::to_string(relay) + " is one of the ranks");
  const size_t p = ranks.size();
  const double message_bytes = total_bytes / static_cast<double>(p);
  std::vector<std::vector<TaskId>> done(p);  // each rank's upload and downloads
  if (p > 1)
    for (size_t o = 0; o < p; ++o) {
      const TaskId up = graph.add_transfer(ranks[o], relay, message_bytes, deps_of(after, o), kind_tag);
      done[o].push_back(up);
      for (size_t i = 0; i < p; ++i)
        if (i != o) done[i].push_back(graph.add_transfer(relay, ranks[i], message_bytes, {up}, kind_tag));
    }
  // A rank is done when its message is up and the others' are down.
  std::vector<TaskId> joins(p);
  for (size_t i = 0; i < p; ++i)
    joins[i] = graph.add_compute(ranks[i], 0, p == 1 ? deps_of(after, i) : done[i], kind_tag);
  return joins;
}

std::vector<TaskId> append_collective(StepGraph& graph, Collective collective, const std::vector<int>& ranks,
                                      double total_bytes, const RankDeps& after, const std::string& kind_tag) {
  switch (collective) {
    case Collective::all_gather: return ring_all_gather(graph, ranks, total_bytes, after, kind_tag);
    case Collective::reduce_scatter: return ring_reduce_scatter(graph, ranks, total_bytes, after, kind_tag);
    case Collective::all_reduce: return ring_all_reduce(graph, ranks, total_bytes, after, kind_tag);
    case Collective::all_to_all: return all_to_all(graph, ranks, total_bytes, after, kind_tag);
    case Collective::p2p: return point_to_point(graph, ranks, total_bytes, after, kind_tag);
    case Collective::incast: return incast(graph, ranks, total_bytes, after, kind_tag);
  }
  throw std::invalid_argument("sim::append_collective: unknown collective");
}

double ring_all_gather_seconds(int p, double total_bytes, double bandwidth_bytes_per_s, double latency_s) {
  return (p - 1) * (total_bytes / (p * bandwidth_bytes_per_s) + latency_s);
}

double ring_reduce_scatter_seconds(int p, double total_bytes, double bandwidth_bytes_per_s, double latency_s) {
  return ring_all_gather_seconds(p, total_bytes, bandwidth_bytes_per_s, latency_s);
}

double ring_all_reduce_seconds(int p, double total_bytes, double bandwidth_bytes_per_s, double latency_s) {
  return 2 * ring_all_gather_seconds(p, total_bytes, bandwidth_bytes_per_s, latency_s);
}

double all_to_all_seconds(int p, double total_bytes, double bandwidth_bytes_per_s, double latency_s,
                          int flows_per_link) {
  if (p == 1) return 0;
  return latency_s + flows_per_link * total_bytes / (p * bandwidth_bytes_per_s);
}

double direct_all_reduce_seconds(int p, double total_bytes, double bandwidth_bytes_per_s, double latency_s,
                                 int flows_per_link) {
  return 2 * all_to_all_seconds(p, total_bytes, bandwidth_bytes_per_s, latency_s, flows_per_link);
}

double point_to_point_seconds(double total_bytes, double bandwidth_bytes_per_s, double latency_s) {
  return latency_s + total_bytes / bandwidth_bytes_per_s;
}

double relay_all_gather_seconds(int p, double total_bytes, double upload_bytes_per_s, double download_bytes_per_s,
                                double relay_in_bytes_per_s, double relay_out_bytes_per_s, double latency_s) {
  if (p < 2) return 0;
  const double message = total_bytes / p;
  return 2 * latency_s + message / std::min(upload_bytes_per_s, relay_in_bytes_per_s / p) +
         (p - 1) * message / std::min(download_bytes_per_s, relay_out_bytes_per_s / p);
}

namespace {

// The tcp model's closed forms (sim/tcp_model.h) on a path of bandwidth B, latency L.
double tcp_expected_seconds(Collective collective, const NetworkSpec& network, int p, double total_bytes, double B,
                            double L, int flows_per_link) {
  const double none = std::numeric_limits<double>::quiet_NaN();
  const TcpSettings& tcp = network.tcp;
  TcpConnection conn = tcp_initial_connection(tcp.connections, tcp.congestion_control);
  // Every rank's connection to its successor goes through the same rounds at once.
  const auto rounds = [&](int n, double bytes) {
    double t = 0;
    for (int k = 0; k < n; ++k) t += tcp_message_seconds(bytes, B, L, tcp, conn);
    return t;
  };
  switch (collective) {
    case Collective::p2p: return tcp_message_seconds(total_bytes, B, L, tcp, conn);
    case Collective::all_gather:
    case Collective::reduce_scatter: return rounds(p - 1, total_bytes / p);
    case Collective::all_reduce: return rounds(2 * (p - 1), total_bytes / p);
    case Collective::incast: {
      if (tcp.connections != ConnectionState::warm) return none;
      if (p < 2) return 0;
      const double share = B * kTcpPayloadPerFrame / flows_per_link;
      return L + total_bytes / std::min(share, tcp_message_rate_bytes_per_s(total_bytes, B, 2 * L, tcp));
    }
    case Collective::all_to_all: return none;
  }
  return none;
}

}  // namespace

double expected_seconds(Collective collective, const NetworkSpec& network, int p, double total_bytes) {
  const double none = std::numeric_limits<double>::quiet_NaN();
  bool star = false;
  if (network.topology == Topology::star && network.node_links.empty())
    star = true;
  else if (!(network.topology == Topology::full_mesh && network.pair_links.empty()))
    return none;
  const double B = network.link.bandwidth_bytes_per_s;
  const double L = star ? 2 * network.link.latency_s : network.link.latency_s;
  const int flows = star ? p - 1 : 1;
  if (network.model == NetworkModel::tcp) return tcp_expected_seconds(collective, network, p, total_bytes, B, L, flows);
  switch (collective) {
    case Collective::all_gather: return ring_all_gather_seconds(p, total_bytes, B, L);
    case Collective::reduce_scatter: return ring_reduce_scatter_seconds(p, total_bytes, B, L);
    case Collective::all_reduce: return ring_all_reduce_seconds(p, total_bytes, B, L);
    case Collective::all_to_all: return all_to_all_seconds(p, total_bytes, B, L, flows);
    case Collective::p2p: return point_to_point_seconds(total_bytes, B, L);
    case Collective::incast: return p < 2 ? 0 : L + flows * total_bytes / B;
  }
  return none;
}

double bus_bandwidth_factor(Collective collective, int p) {
  switch (collective) {
    case Collective::all_reduce: return 2.0 * (p - 1) / p;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return static_cast<double>(p - 1) / p;
    case Collective::p2p: return 1;
    case Collective::incast: return p - 1;
  }
  return 1;
}

}  // namespace lowband::sim
