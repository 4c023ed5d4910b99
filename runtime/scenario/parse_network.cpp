// The "network" section: topology, links, and per-node or per-pair overrides,
// filled into sim::NetworkSpec as sim/network.h documents it.
#include <algorithm>
#include <set>
#include <utility>

#include "runtime/scenario/fields.h"
#include "runtime/scenario/parse_internal.h"
#include "sim/simgrid_settings.h"

namespace lowband::scenario_detail {
namespace {

// The keys a topology allows: the field table's, less those of other topologies.
std::vector<std::string> keys_for(const std::string& topology) {
  std::vector<std::string> keys;
  for (const fields::Field& f : fields::section("network").fields)
    if (f.applies.key != "topology" ||
        std::find(f.applies.values.begin(), f.applies.values.end(), topology) != f.applies.values.end())
      keys.push_back(f.key);
  return keys;
}

// network.tcp: the tcp model's send buffer, congestion control and connection state.
sim::TcpSettings tcp_settings(const ObjectReader& r, sim::NetworkModel model) {
  sim::TcpSettings tcp;
  if (!r.has("tcp")) return tcp;
  if (model != sim::NetworkModel::tcp)
    throw SchemaError(r.path_of("tcp"), r.path_of("tcp") + ": only the tcp model reads it (network.model is \"ideal\")",
                      {r.path_of("model")});
  const ObjectReader t = r.object("tcp", {"send_buffer", "congestion_control", "connections"});
  if (t.has("send_buffer")) {
    tcp.send_buffer_bytes = t.bytes("send_buffer");
    if (!(tcp.send_buffer_bytes >= 4096))
      throw SchemaError(t.path_of("send_buffer"), t.path_of("send_buffer") + ": must be at least 4KiB, got " +
                                                      t.need("send_buffer").dump());
  }
  tcp.congestion_control = value_of(sim::congestion_control_words(),
                                    t.choice_or("congestion_control", "cubic", words_of(sim::congestion_control_words())));
  tcp.connections =
      value_of(sim::connection_state_words(), t.choice_or("connections", "warm", words_of(sim::connection_state_words())));
  return tcp;
}

// A link's physical range, the same for every link of every topology (access
// links, pair links, WAN links, overrides). SimGrid's max-min solver works to 1e-5
// bytes/s and its clock to 1e-9 s: a bandwidth near that precision (1e-310bps is a
// subnormal) or a latency under a nanosecond crashes or stalls it, and a link slower
// than 1 kbps or a latency past 1000 s turns a step into centuries. 1 kbps is below
// any modem still in use; 1 Pbps is far above any one link (the fastest are 1.6 Tbps);
// 1000 s is past any terrestrial or satellite path (geostationary: 0.25 s).
constexpr double kMinLinkBandwidth = 125;      // bytes/s: 1 kbps
constexpr double kMaxLinkBandwidth = 1.25e14;  // bytes/s: 1 Pbps
constexpr double kMinLatency = 1e-9;           // s, or exactly 0
constexpr double kMaxLatency = 1000;           // s

double link_bandwidth(const ObjectReader& r, const std::string& key) {
  const double v = r.bandwidth(key);
  if (!(v >= kMinLinkBandwidth && v <= kMaxLinkBandwidth))
    throw SchemaError(r.path_of(key), r.path_of(key) + ": " + r.need(key).dump() +
                                          " is out of range: a link's bandwidth is 1Kbps..1000Tbps (1 Pbps)");
  return v;
}
double link_latency(const ObjectReader& r, const std::string& key) {
  const double v = r.duration(key);
  if (!(v == 0 || (v >= kMinLatency && v <= kMaxLatency)))
    throw SchemaError(r.path_of(key), r.path_of(key) + ": " + r.need(key).dump() +
                                          " is out of range: a link's latency is 0s or 1ns..1000s");
  return v;
}

// An override: the base link with whichever of bandwidth, latency and (access
// links) upload_bandwidth it gives; a new bandwidth without an upload_bandwidth
// is the same both ways.
sim::Link override_link(const ObjectReader& r, const sim::Link& base) {
  if (!r.has("bandwidth") && !r.has("latency") && !r.has("upload_bandwidth"))
    throw SchemaError(r.path(), r.path() + ": an override needs \"bandwidth\" or \"latency\" (access links: or \"upload_bandwidth\")");
  const double upload = r.has("bandwidth") ? 0.0 : base.upload_bytes_per_s;
  return {r.has("bandwidth") ? link_bandwidth(r, "bandwidth") : base.bandwidth_bytes_per_s,
          r.has("latency") ? link_latency(r, "latency") : base.latency_s,
          r.has("upload_bandwidth") ? link_bandwidth(r, "upload_bandwidth") : upload};
}

sim::Link full_link(const ObjectReader& r) { return {link_bandwidth(r, "bandwidth"), link_latency(r, "latency")}; }

// An access link: bandwidth (the download), latency, and upload_bandwidth if it
// differs.
sim::Link access_link(const ObjectReader& r) {
  sim::Link link = full_link(r);
  if (r.has("upload_bandwidth")) link.upload_bytes_per_s = link_bandwidth(r, "upload_bandwidth");
  return link;
}

std::vector<ObjectReader> elements(const ObjectReader& r, const std::string& key,
                                   const std::vector<std::string>& known, bool required) {
  std::vector<ObjectReader> out;
  if (!required && !r.has(key)) return out;
  const std::string path = r.path_of(key);
  const json& array = as_array(r.need(key), path);
  for (size_t i = 0; i < array.size(); ++i) out.emplace_back(array[i], join_path(path, std::to_string(i)), known);
  return out;
}

// Per-node access overrides; `access_of(node)` is the node's link without override.
template <typename AccessOf>
std::vector<sim::NodeLink> node_overrides(const ObjectReader& r, int nodes, AccessOf access_of) {
  std::vector<sim::NodeLink> out;
  std::set<int> seen;
  for (const auto& o : elements(r, "overrides", {"node", "bandwidth", "upload_bandwidth", "latency"}, false)) {
    const int node = index_in(o.need("node"), o.path_of("node"), nodes, "node");
    if (!seen.insert(node).second)
      throw SchemaError(o.path_of("node"), o.path_of("node") + ": node " + std::to_string(node) +
                                               " is overridden twice");
    out.push_back({node, override_link(o, access_of(node))});
  }
  return out;
}

std::vector<sim::PairLink> pair_overrides(const std::vector<ObjectReader>& items, int count, const char* thing,
                                          const sim::Link& base, bool full) {
  std::vector<sim::PairLink> out;
  std::set<std::pair<int, int>> seen;
  for (const auto& o : items) {
    const auto [a, b] = between(o, count, thing);
    if (!seen.insert({a, b}).second)
      throw SchemaError(o.path_of("between"), o.path_of("between") + ": " + thing + "s " + std::to_string(a) +
                                                  " and " + std::to_string(b) + " are listed twice");
    out.push_back({a, b, full ? full_link(o) : override_link(o, base)});
  }
  return out;
}

// Explicit links must connect every node to every other (possibly over several hops).
void check_connected(const ObjectReader& r, const sim::NetworkSpec& net) {
  // Breadth-first search from node 0 over the undirected links.
  std::vector<std::vector<int>> neighbours(static_cast<size_t>(net.nodes));
  for (const auto& l : net.pair_links) {
    neighbours[static_cast<size_t>(l.a)].push_back(l.b);
    neighbours[static_cast<size_t>(l.b)].push_back(l.a);
  }
  std::vector<bool> reached(static_cast<size_t>(net.nodes), false);
  std::vector<int> frontier = {0};
  reached[0] = true;
  while (!frontier.empty()) {
    const int node = frontier.back();
    frontier.pop_back();
    for (int next : neighbours[static_cast<size_t>(node)])
      if (!reached[static_cast<size_t>(next)]) reached[static_cast<size_t>(next)] = true, frontier.push_back(next);
  }
  for (int i = 1; i < net.nodes; ++i)
    if (!reached[static_cast<size_t>(i)])
      throw SchemaError(r.path_of("links"), r.path_of("links") + ": node " + std::to_string(i) +
                                                " is not connected to node 0 by any path of links");
}

// network.simgrid: SimGrid setting -> value (strings; numbers and booleans as written),
// each checked here against the settings lowband passes on (sim/simgrid_settings.h),
// so that SimGrid never sees one it would crash on.
std::vector<std::pair<std::string, std::string>> simgrid_config(const ObjectReader& r) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!r.has("simgrid")) return out;
  const std::string path = r.path_of("simgrid");
  const json& v = r.need("simgrid");
  if (!v.is_object()) throw SchemaError(path, path + ": expected an object of SimGrid settings, got " + v.dump());
  for (const auto& [key, value] : v.items()) {
    const std::string at = join_path(path, key);
    if (key.empty() || key.find(':') != std::string::npos)
      throw SchemaError(at, at + ": a SimGrid setting name has no ':' and is not empty");
    if (value.is_string())
      out.emplace_back(key, value.get<std::string>());
    else if (value.is_number() || value.is_boolean())
      out.emplace_back(key, value.dump());
    else
      throw SchemaError(at, at + ": expected a string, number or boolean, got " + value.dump());
    const std::string problem = sim::simgrid_setting_problem(key, out.back().second);
    if (!problem.empty()) throw SchemaError(at, at + ": " + problem);
  }
  return out;
}

}  // namespace

// An index into `count` things ("node", "cluster") at `path`.
int index_in(const json& v, const std::string& path, int count, const char* thing) {
  if (!v.is_number_integer())
    throw SchemaError(path, path + ": expected a " + std::string(thing) + " index (an integer), got " + v.dump());
  const int64_t i = v.get<int64_t>();
  if (i < 0 || i >= count)
    throw SchemaError(path, path + ": " + thing + " " + std::to_string(i) + " is out of range: the network has " +
                                std::to_string(count) + " " + thing + "s (0.." + std::to_string(count - 1) + ")");
  return static_cast<int>(i);
}

// "between": [a, b], two distinct indices, returned with a < b.
std::pair<int, int> between(const ObjectReader& r, int count, const char* thing) {
  const std::string path = r.path_of("between");
  const json& v = as_array(r.need("between"), path);
  if (v.size() != 2)
    throw SchemaError(path, path + ": expected two " + thing + " indices [a, b], got " + v.dump());
  const int a = index_in(v[0], join_path(path, "0"), count, thing);
  const int b = index_in(v[1], join_path(path, "1"), count, thing);
  if (a == b) throw SchemaError(path, path + ": a link joins two different " + thing + "s, got " + v.dump());
  return {std::min(a, b), std::max(a, b)};
}

sim::NetworkSpec parse_network(const ObjectReader& root, const std::string& source) {
  const std::vector<std::string> all_keys = fields::section("network").keys();
  const ObjectReader all = root.object("network", all_keys);
  sim::NetworkSpec net;
  net.source = all.string_or("source", "");
  net.model = value_of(sim::network_model_words(), all.choice("model", words_of(sim::network_model_words())));
  net.message_order = value_of(sim::message_order_words(),
                               all.choice_or("message_order", "concurrent", words_of(sim::message_order_words())));
  const std::string topology = all.choice("topology", words_of(sim::topology_words()));
  const std::vector<std::string> known = keys_for(topology);
  for (const auto& key : all_keys)
    if (all.has(key) && std::find(known.begin(), known.end(), key) == known.end())
      throw SchemaError(all.path_of(key),
                        all.path_of(key) + ": key \"" + key + "\" is not used by topology \"" + topology + "\"",
                        {all.path_of("topology")});
  const ObjectReader r(root.need("network"), all.path(), known);

  if (topology == "star" || topology == "full_mesh") {
    net.topology = topology == "star" ? sim::Topology::star : sim::Topology::full_mesh;
    net.nodes = static_cast<int>(r.integer("nodes", 1, kMaxNodes));
    net.link = topology == "star" ? access_link(r) : full_link(r);
    if (topology == "star") {
      net.node_links = node_overrides(r, net.nodes, [&](int) { return net.link; });
    } else {
      net.pair_links = pair_overrides(elements(r, "overrides", {"between", "bandwidth", "latency"}, false),
                                      net.nodes, "node", net.link, false);
    }
  } else if (topology == "clusters") {
    net.topology = sim::Topology::clusters;
    std::vector<int> cluster_of;
    for (const auto& c : elements(r, "clusters", {"nodes", "bandwidth", "upload_bandwidth", "latency"}, true)) {
      sim::Cluster cluster{static_cast<int>(c.integer("nodes", 1, kMaxNodes)), access_link(c)};
      cluster_of.insert(cluster_of.end(), static_cast<size_t>(cluster.nodes), static_cast<int>(net.clusters.size()));
      net.clusters.push_back(cluster);
      if (cluster_of.size() > static_cast<size_t>(kMaxNodes))
        throw SchemaError(r.path_of("clusters"), r.path_of("clusters") + ": more than " +
                                                     std::to_string(kMaxNodes) + " nodes in all");
    }
    const int count = static_cast<int>(net.clusters.size());
    if (count < 2)
      throw SchemaError(r.path_of("clusters"), r.path_of("clusters") +
                                                   ": topology \"clusters\" needs at least 2 clusters (use \"star\" for one)");
    net.nodes = static_cast<int>(cluster_of.size());
    if (r.has("nodes") && r.integer("nodes", 1, kMaxNodes) != net.nodes)
      throw SchemaError(r.path_of("nodes"), r.path_of("nodes") + ": the clusters have " + std::to_string(net.nodes) +
                                                " nodes in all, but nodes is " + r.need("nodes").dump());
    net.wan = full_link(r.object("wan", {"bandwidth", "latency"}));
    net.wan_links = pair_overrides(elements(r, "wan_overrides", {"between", "bandwidth", "latency"}, false), count,
                                   "cluster", net.wan, false);
    net.node_links = node_overrides(r, net.nodes, [&](int node) {
      return net.clusters[static_cast<size_t>(cluster_of[static_cast<size_t>(node)])].access;
    });
  } else {
    net.topology = sim::Topology::explicit_links;
    net.nodes = static_cast<int>(r.integer("nodes", 1, kMaxNodes));
    net.pair_links = pair_overrides(elements(r, "links", {"between", "bandwidth", "latency"}, true), net.nodes,
                                    "node", {}, true);
    check_connected(r, net);
  }
  net.tcp = tcp_settings(r, net.model);
  net.simgrid_config = simgrid_config(r);
  net.dynamics = parse_dynamics(r, net, source);  // after the model and simgrid, which latency traces read
  net.restart = parse_restart(r, net);
  return net;
}

}  // namespace lowband::scenario_detail
