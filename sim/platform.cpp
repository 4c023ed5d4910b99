#include "sim/platform.h"

#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "common/error.h"
#include "sim/simgrid_settings.h"
#include "sim/tcp_model.h"

namespace lowband::sim {

namespace sg4 = simgrid::s4u;
using Direction = sg4::LinkInRoute::Direction;

namespace {

std::string at(const char* list, size_t i, const char* field) {
  return std::string("network.") + list + "[" + std::to_string(i) + "]" + (field[0] ? "." : "") + field;
}

void check_link(const std::string& place, const Link& link) {
  if (!(link.bandwidth_bytes_per_s > 0) || !std::isfinite(link.bandwidth_bytes_per_s))
    throw InputError(place + ".bandwidth", "must be a positive bandwidth, got " +
                                               std::to_string(link.bandwidth_bytes_per_s) + " bytes/s");
  if (!(link.latency_s >= 0) || !std::isfinite(link.latency_s))
    throw InputError(place + ".latency", "must be a latency >= 0, got " + std::to_string(link.latency_s) + " s");
  if (!(link.upload_bytes_per_s >= 0) || !std::isfinite(link.upload_bytes_per_s))
    throw InputError(place + ".upload_bandwidth", "must be a positive bandwidth, got " +
                                                      std::to_string(link.upload_bytes_per_s) + " bytes/s");
}

void check_index(const std::string& place, int index, int count, const char* what) {
  if (index < 0 || index >= count)
    throw InputError(place, std::string("no ") + what + " " + std::to_string(index) + " (there are " +
                                std::to_string(count) + ")");
}

void check_node_links(const NetworkSpec& net) {
  for (size_t i = 0; i < net.node_links.size(); ++i) {
    check_index(at("node_links", i, "node"), net.node_links[i].node, net.nodes, "node");
    check_link(at("node_links", i, "link"), net.node_links[i].link);
  }
}

void check_pairs(const std::vector<PairLink>& pairs, const char* list, int count, const char* what) {
  std::set<std::pair<int, int>> seen;
  for (size_t i = 0; i < pairs.size(); ++i) {
    check_index(at(list, i, "a"), pairs[i].a, count, what);
    check_index(at(list, i, "b"), pairs[i].b, count, what);
    if (pairs[i].a == pairs[i].b)
      throw InputError(at(list, i, ""), std::string("joins ") + what + " " + std::to_string(pairs[i].a) +
                                            " to itself");
    if (!seen.insert(std::minmax(pairs[i].a, pairs[i].b)).second)
      throw InputError(at(list, i, ""), std::string("the pair ") + std::to_string(pairs[i].a) + "-" +
                                            std::to_string(pairs[i].b) + " is listed twice");
    check_link(at(list, i, "link"), pairs[i].link);
  }
}

// Neighbours of each node over explicit links: (node, index into pair_links), in listing order.
std::vector<std::vector<std::pair<int, int>>> adjacency(const NetworkSpec& net) {
  std::vector<std::vector<std::pair<int, int>>> adj(static_cast<size_t>(net.nodes));
  for (size_t i = 0; i < net.pair_links.size(); ++i) {
    const PairLink& p = net.pair_links[i];
    adj[static_cast<size_t>(p.a)].emplace_back(p.b, static_cast<int>(i));
    adj[static_cast<size_t>(p.b)].emplace_back(p.a, static_cast<int>(i));
  }
  return adj;
}

// Breadth-first search from src: the link (index) by which each node is first reached, -1 if never.
std::vector<int> bfs_via(const std::vector<std::vector<std::pair<int, int>>>& adj, int src) {
  std::vector<int> via(adj.size(), -1);
  std::vector<char> seen(adj.size(), 0);
  std::vector<int> queue{src};
  seen[static_cast<size_t>(src)] = 1;
  for (size_t head = 0; head < queue.size(); ++head) {
    const int node = queue[head];
    for (auto [next, link] : adj[static_cast<size_t>(node)]) {
      if (seen[static_cast<size_t>(next)]) continue;
      seen[static_cast<size_t>(next)] = 1;
      via[static_cast<size_t>(next)] = link;
      queue.push_back(next);
    }
  }
  return via;
}

const Link& access_link(const NetworkSpec& net, int node, const Link& fallback) {
  const Link* link = &fallback;
  for (const NodeLink& o : net.node_links)
    if (o.node == node) link = &o.link;  // the last override wins
  return *link;
}

sg4::Link* make_link(sg4::NetZone* zone, const std::string& name, const Link& link) {
  sg4::SplitDuplexLink* l = zone->create_split_duplex_link(name, link.bandwidth_bytes_per_s);
  l->set_latency(link.latency_s);
  // An access link's route from its host is UP (add_star_hosts): the upload.
  if (link.upload() != link.bandwidth_bytes_per_s) l->get_link_up()->set_bandwidth(link.upload());
  l->seal();
  return l;
}

std::string host_name(int node) { return "n" + std::to_string(node); }

// A star zone: one access link per node; returns the hosts.
void add_star_hosts(sg4::NetZone* zone, const NetworkSpec& net, int first, int count, const Link& access,
                    std::vector<sg4::Host*>& hosts) {
  for (int node = first; node < first + count; ++node) {
    sg4::Host* host = zone->create_host(host_name(node), kHostFlopsPerSecond);
    sg4::Link* link = make_link(zone, "access" + std::to_string(node), access_link(net, node, access));
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {sg4::LinkInRoute(link, Direction::UP)},
                    true);
    hosts[static_cast<size_t>(node)] = host;
  }
}

void build_star(const NetworkSpec& net, std::vector<sg4::Host*>& hosts) {
  sg4::NetZone* zone = sg4::create_star_zone("star");
  add_star_hosts(zone, net, 0, net.nodes, net.link, hosts);
  zone->seal();
}

void build_full_mesh(const NetworkSpec& net, std::vector<sg4::Host*>& hosts) {
  sg4::NetZone* zone = sg4::create_full_zone("mesh");
  for (int node = 0; node < net.nodes; ++node)
    hosts[static_cast<size_t>(node)] = zone->create_host(host_name(node), kHostFlopsPerSecond);
  std::vector<const Link*> pair_link(static_cast<size_t>(net.nodes) * net.nodes, &net.link);
  for (const PairLink& p : net.pair_links) {
    pair_link[static_cast<size_t>(p.a) * net.nodes + p.b] = &p.link;
    pair_link[static_cast<size_t>(p.b) * net.nodes + p.a] = &p.link;
  }
  for (int a = 0; a < net.nodes; ++a)
    for (int b = a + 1; b < net.nodes; ++b) {
      sg4::Link* link = make_link(zone, "pair" + std::to_string(a) + "_" + std::to_string(b),
                                  *pair_link[static_cast<size_t>(a) * net.nodes + b]);
      zone->add_route(hosts[a]->get_netpoint(), hosts[b]->get_netpoint(), nullptr, nullptr,
                      {sg4::LinkInRoute(link, Direction::UP)}, true);
    }
  zone->seal();
}

void build_clusters(const NetworkSpec& net, std::vector<sg4::Host*>& hosts) {
  sg4::NetZone* world = sg4::create_full_zone("world");
  std::vector<sg4::NetZone*> zones;
  std::vector<simgrid::kernel::routing::NetPoint*> gateways;
  int first = 0;
  for (size_t c = 0; c < net.clusters.size(); ++c) {
    sg4::NetZone* zone = sg4::create_star_zone("cluster" + std::to_string(c));
    zone->set_parent(world);
    gateways.push_back(zone->create_router("gw" + std::to_string(c)));
    add_star_hosts(zone, net, first, net.clusters[c].nodes, net.clusters[c].access, hosts);
    zone->seal();
    zones.push_back(zone);
    first += net.clusters[c].nodes;
  }
  const int count = static_cast<int>(net.clusters.size());
  std::vector<const Link*> wan(static_cast<size_t>(count) * count, &net.wan);
  for (const PairLink& p : net.wan_links) {
    wan[static_cast<size_t>(p.a) * count + p.b] = &p.link;
    wan[static_cast<size_t>(p.b) * count + p.a] = &p.link;
  }
  for (int a = 0; a < count; ++a)
    for (int b = a + 1; b < count; ++b) {
      sg4::Link* link = make_link(world, "wan" + std::to_string(a) + "_" + std::to_string(b),
                                  *wan[static_cast<size_t>(a) * count + b]);
      world->add_route(zones[a]->get_netpoint(), zones[b]->get_netpoint(), gateways[a], gateways[b],
                       {sg4::LinkInRoute(link, Direction::UP)}, true);
    }
  world->seal();
}

// SimGrid's Dijkstra zone weighs a route by its number of links: fewest hops. Routes
// are computed per source on first use and cached, so memory stays O(nodes^2) even
// for long paths (storing every full route would be O(nodes^2 * hops)).
void build_explicit(const NetworkSpec& net, std::vector<sg4::Host*>& hosts) {
  sg4::NetZone* zone = sg4::create_dijkstra_zone("links", /*cache=*/true);
  for (int node = 0; node < net.nodes; ++node)
    hosts[static_cast<size_t>(node)] = zone->create_host(host_name(node), kHostFlopsPerSecond);
  for (size_t i = 0; i < net.pair_links.size(); ++i) {
    const PairLink& p = net.pair_links[i];
    sg4::Link* link = make_link(zone, "link" + std::to_string(i), p.link);
    // UP is the direction from the listed a to b; the reverse route takes DOWN.
    zone->add_route(hosts[static_cast<size_t>(p.a)]->get_netpoint(), hosts[static_cast<size_t>(p.b)]->get_netpoint(),
                    nullptr, nullptr, {sg4::LinkInRoute(link, Direction::UP)}, true);
  }
  zone->seal();
}

// The tcp model's per-connection state, one connection per directed host pair, read
// and advanced by SimGrid's latency-factor callback as each message starts. One
// platform per process (SimGrid's engine is a singleton), hence one table.
struct TcpConnections {
  TcpSettings settings;
  std::map<std::pair<const sg4::Host*, const sg4::Host*>, TcpConnection> by_pair;
  // The message starting now waited on its stream since then (set_tcp_queued_since); NaN: it did not.
  double queued_since_s = std::numeric_limits<double>::quiet_NaN();
};
TcpConnections& tcp_connections() {
  static TcpConnections table;
  return table;
}

struct Path {
  double latency_s = 0, bottleneck_bytes_per_s = -1;
};
Path path_of(const std::vector<sg4::Link*>& links) {
  Path p;
  for (const sg4::Link* l : links) {
    p.latency_s += l->get_latency();
    if (p.bottleneck_bytes_per_s < 0 || l->get_bandwidth() < p.bottleneck_bytes_per_s)
      p.bottleneck_bytes_per_s = l->get_bandwidth();
  }
  return p;
}

// Latency factor of one message: (L + startup - first-window bonus) / L, as
// sim/tcp_model.h says; SimGrid's TCP-gamma then streams it at the steady rate.
// A connection idle past its RTO first restarts its window. A message that waited on
// its stream (message_order fifo, connection) starts when the one before arrived:
// if it was ready before that one's last byte left (now - L), its bytes follow them
// and it adds tcp_backlog_increment_seconds to their arrival; else its latency
// overlaps theirs since it was ready.
double tcp_latency_factor(double bytes, const sg4::Host* src, const sg4::Host* dst,
                          const std::vector<sg4::Link*>& links) {
  TcpConnections& table = tcp_connections();
  const double queued_since = table.queued_since_s;
  table.queued_since_s = std::numeric_limits<double>::quiet_NaN();
  const Path path = path_of(links);
  const double latency = path.latency_s, bottleneck = path.bottleneck_bytes_per_s;
  if (!(latency > 0) || !(bottleneck > 0)) return 1;
  const TcpSettings& tcp = table.settings;
  TcpConnection& conn =
      table.by_pair.try_emplace({src, dst}, tcp_initial_connection(tcp.connections, tcp.congestion_control)).first->second;
  const double now = sg4::Engine::get_clock();
  const double rtt = 2 * latency;
  const double rate = tcp_rate_bytes_per_s(bottleneck, rtt, tcp);
  const bool queued = queued_since < now;  // false for NaN
  if (conn.open && conn.restarts_after_idle && !queued)
    conn.window_bytes = tcp_window_after_idle_bytes(conn.window_bytes, bottleneck * kTcpPayloadPerFrame * rtt,
                                                    now - conn.last_departure_s, rtt, tcp.congestion_control);
  const double startup = tcp_startup_seconds(bytes, rate, rtt, tcp.congestion_control, conn);
  double seconds;  // SimGrid's latency phase; the bytes then stream at the steady rate
  if (queued && queued_since <= now - latency) {
    seconds = startup + tcp_backlog_increment_seconds(conn.backlog_bytes, bytes, bottleneck, latency, tcp) -
              bytes / rate;
    conn.backlog_bytes += bytes;
  } else {
    const double overlap = queued ? now - queued_since : 0;
    seconds = latency - overlap + startup - tcp_first_window_bonus_seconds(bytes, bottleneck, rtt, tcp);
    conn.backlog_bytes = bytes;
  }
  seconds = std::max(0.0, seconds);
  conn.last_departure_s = now + seconds + bytes / rate - latency;  // alone on its path
  return seconds / latency;
}

void install_tcp_model(const TcpSettings& tcp) {
  tcp_connections() = {tcp, {}};
  auto* model = sg4::Engine::get_instance()->get_netzone_root()->get_network_model();
  model->set_bw_factor_cb([](double, const sg4::Host*, const sg4::Host*, const std::vector<sg4::Link*>&,
                             const std::unordered_set<sg4::NetZone*>&) { return kTcpPayloadPerFrame; });
  model->set_lat_factor_cb([](double bytes, const sg4::Host* src, const sg4::Host* dst,
                              const std::vector<sg4::Link*>& links, const std::unordered_set<sg4::NetZone*>&) {
    return tcp_latency_factor(bytes, src, dst, links);
  });
}

// network.restart: durations SimGrid's clock holds, and a state trace for it to act on.
void check_restart(const NetworkSpec& net) {
  const RestartPolicy& r = *net.restart;
  if (!(r.stall_timeout_seconds > 0 && r.stall_timeout_seconds <= 1e9))
    throw InputError("network.restart.stall_timeout", "must be in (0, 1e9] s, got " + std::to_string(r.stall_timeout_seconds));
  if (!(r.relaunch_seconds >= 0 && r.relaunch_seconds <= 1e9))
    throw InputError("network.restart.relaunch", "must be in [0, 1e9] s, got " + std::to_string(r.relaunch_seconds));
  if (!takes_anything_down(net.dynamics))
    throw InputError("network.restart", "has no effect without a \"state\" trace in network.dynamics: a step stalls "
                                        "only on a node or link that is down");
}

}  // namespace

void reset_tcp_connections() { tcp_connections().by_pair.clear(); }

void set_tcp_queued_since(double ready_s) { tcp_connections().queued_since_s = ready_s; }

void validate_network(const NetworkSpec& net) {
  for (const auto& [key, value] : net.simgrid_config) {
    const std::string problem = simgrid_setting_problem(key, value);
    if (!problem.empty()) throw InputError("network.simgrid." + key, problem);
  }
  if (net.nodes < 1)
    throw InputError("network.nodes", "must be at least 1, got " + std::to_string(net.nodes));
  switch (net.topology) {
    case Topology::star:
      check_link("network.link", net.link);
      check_node_links(net);
      break;
    case Topology::full_mesh:
      if (net.nodes > 1) check_link("network.link", net.link);
      check_pairs(net.pair_links, "pair_links", net.nodes, "node");
      break;
    case Topology::clusters: {
      if (net.clusters.empty()) throw InputError("network.clusters", "at least one cluster is needed");
      int total = 0;
      for (size_t c = 0; c < net.clusters.size(); ++c) {
        if (net.clusters[c].nodes < 1)
          throw InputError(at("clusters", c, "nodes"),
                           "must be at least 1, got " + std::to_string(net.clusters[c].nodes));
        check_link(at("clusters", c, "access"), net.clusters[c].access);
        total += net.clusters[c].nodes;
      }
      if (total != net.nodes)
        throw InputError("network.nodes", "is " + std::to_string(net.nodes) + " but the clusters hold " +
                                              std::to_string(total) + " nodes");
      if (net.clusters.size() > 1) check_link("network.wan", net.wan);
      check_pairs(net.wan_links, "wan_links", static_cast<int>(net.clusters.size()), "cluster");
      check_node_links(net);
      break;
    }
    case Topology::explicit_links: {
      check_pairs(net.pair_links, "pair_links", net.nodes, "node");
      const std::vector<int> via = bfs_via(adjacency(net), 0);
      for (int node = 1; node < net.nodes; ++node)
        if (via[static_cast<size_t>(node)] < 0)
          throw InputError("network", "node " + std::to_string(node) + " cannot reach node 0");
      break;
    }
  }
  if (net.restart) check_restart(net);
}

void configure_network_model(const NetworkSpec& net) {
  switch (net.model) {
    case NetworkModel::ideal:
      // Plain alpha-beta: no latency/bandwidth correction, no ACK traffic, no TCP window.
      sg4::Engine::set_config("network/model:CM02");
      sg4::Engine::set_config("network/crosstraffic:0");
      sg4::Engine::set_config("network/TCP-gamma:0");
      // The latency factor stays at CM02's default, 1: set, it would forbid the
      // latency callback with which replay defers latency (sim/deferred_latency.h).
      sg4::Engine::set_config("network/bandwidth-factor:1");
      break;
    case NetworkModel::tcp:
      // Header overhead and startup come from callbacks (install_tcp_model); the
      // window cap is SimGrid's TCP-gamma: each flow's link share is bounded by
      // gamma / (2 * route latency), and its goodput is that times the bandwidth
      // factor, hence the division. No ACK cross-traffic: flows sharing the testbed's
      // downlinks measured none beyond the header overhead (analysis/network-fidelity/).
      sg4::Engine::set_config("network/model:CM02");
      sg4::Engine::set_config("network/crosstraffic:0");
      sg4::Engine::set_config("network/TCP-gamma:" + std::to_string(tcp_window_bytes(net.tcp) / kTcpPayloadPerFrame));
      break;
  }
}

std::vector<sg4::Host*> build_platform(const NetworkSpec& net) {
  validate_network(net);
  configure_network_model(net);
  for (const auto& [key, value] : net.simgrid_config) {
    try {
      sg4::Engine::set_config(key + ":" + value);
    } catch (const std::exception& e) {
      throw InputError("network.simgrid." + key, std::string("SimGrid refused it: ") + e.what());
    }
  }
  std::vector<sg4::Host*> hosts(static_cast<size_t>(net.nodes), nullptr);
  switch (net.topology) {
    case Topology::star: build_star(net, hosts); break;
    case Topology::full_mesh: build_full_mesh(net, hosts); break;
    case Topology::clusters: build_clusters(net, hosts); break;
    case Topology::explicit_links: build_explicit(net, hosts); break;
  }
  if (net.model == NetworkModel::tcp) install_tcp_model(net.tcp);
  return hosts;
}

}  // namespace lowband::sim
