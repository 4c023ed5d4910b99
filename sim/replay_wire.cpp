#include "sim/replay_wire.h"

#include <istream>
#include <ostream>
#include <string>

#include "common/binary_io.h"

namespace lowband::sim::wire {

namespace {

// The wire's first bytes: a request of another build's format is refused, not misread.
constexpr uint64_t kMagic = 0x6c6f7762'72706c31;  // "lowbrpl1"

void put(std::ostream& out, const Link& l) {
  binary::write_f64(out, l.bandwidth_bytes_per_s);
  binary::write_f64(out, l.latency_s);
  binary::write_f64(out, l.upload_bytes_per_s);
}
Link get_link(std::istream& in) {
  Link l;
  l.bandwidth_bytes_per_s = binary::read_f64(in, "a link");
  l.latency_s = binary::read_f64(in, "a link");
  l.upload_bytes_per_s = binary::read_f64(in, "a link");
  return l;
}

void put(std::ostream& out, const std::vector<PairLink>& links) {
  binary::write_u64(out, links.size());
  for (const PairLink& p : links) binary::write_i64(out, p.a), binary::write_i64(out, p.b), put(out, p.link);
}
std::vector<PairLink> get_pair_links(std::istream& in) {
  std::vector<PairLink> out(binary::read_length(in, "pair links"));
  for (PairLink& p : out) {
    p.a = int(binary::read_i64(in, "a pair link"));
    p.b = int(binary::read_i64(in, "a pair link"));
    p.link = get_link(in);
  }
  return out;
}

template <class E> void put_enum(std::ostream& out, E e) { binary::write_i64(out, int64_t(e)); }
template <class E> E get_enum(std::istream& in, const char* what) { return E(binary::read_i64(in, what)); }

void put(std::ostream& out, const TraceSpec& t) {
  put_enum(out, t.kind);
  binary::write_u64(out, t.points.size());
  for (const TracePoint& p : t.points) binary::write_f64(out, p.seconds), binary::write_f64(out, p.value);
  for (double x : {t.low, t.low_at_s, t.period_s, t.sample_s, t.every_s, t.sigma, t.min, t.max, t.mean_up_s,
                   t.mean_down_s, t.value})
    binary::write_f64(out, x);
  binary::write_u64(out, t.seed);
}
TraceSpec get_trace(std::istream& in) {
  TraceSpec t;
  t.kind = get_enum<TraceSpec::Kind>(in, "a trace");
  t.points.resize(binary::read_length(in, "a trace's points"));
  for (TracePoint& p : t.points) p.seconds = binary::read_f64(in, "a trace point"), p.value = binary::read_f64(in, "a trace point");
  for (double* x : {&t.low, &t.low_at_s, &t.period_s, &t.sample_s, &t.every_s, &t.sigma, &t.min, &t.max, &t.mean_up_s,
                    &t.mean_down_s, &t.value})
    *x = binary::read_f64(in, "a trace");
  t.seed = binary::read_u64(in, "a trace");
  return t;
}

void put(std::ostream& out, const NetworkSpec& n) {
  put_enum(out, n.model);
  put_enum(out, n.topology);
  binary::write_i64(out, n.nodes);
  put(out, n.link);
  binary::write_u64(out, n.node_links.size());
  for (const NodeLink& l : n.node_links) binary::write_i64(out, l.node), put(out, l.link);
  put(out, n.pair_links);
  binary::write_u64(out, n.clusters.size());
  for (const Cluster& c : n.clusters) binary::write_i64(out, c.nodes), put(out, c.access);
  put(out, n.wan);
  put(out, n.wan_links);
  binary::write_f64(out, n.tcp.send_buffer_bytes);
  put_enum(out, n.tcp.congestion_control);
  put_enum(out, n.tcp.connections);
  put_enum(out, n.message_order);
  binary::write_u64(out, n.simgrid_config.size());
  for (const auto& [key, value] : n.simgrid_config) binary::write_string(out, key), binary::write_string(out, value);
  binary::write_u64(out, n.dynamics.size());
  for (const NetworkDynamic& d : n.dynamics) {
    put_enum(out, d.target.kind);
    binary::write_i64(out, d.target.a), binary::write_i64(out, d.target.b);
    put_enum(out, d.quantity);
    put(out, d.trace);
  }
  binary::write_bool(out, n.restart.has_value());
  if (n.restart) binary::write_f64(out, n.restart->stall_timeout_seconds), binary::write_f64(out, n.restart->relaunch_seconds);
}

NetworkSpec get_network(std::istream& in) {
  NetworkSpec n;
  n.model = get_enum<NetworkModel>(in, "the network");
  n.topology = get_enum<Topology>(in, "the network");
  n.nodes = int(binary::read_i64(in, "the network"));
  n.link = get_link(in);
  n.node_links.resize(binary::read_length(in, "node links"));
  for (NodeLink& l : n.node_links) l.node = int(binary::read_i64(in, "a node link")), l.link = get_link(in);
  n.pair_links = get_pair_links(in);
  n.clusters.resize(binary::read_length(in, "clusters"));
  for (Cluster& c : n.clusters) c.nodes = int(binary::read_i64(in, "a cluster")), c.access = get_link(in);
  n.wan = get_link(in);
  n.wan_links = get_pair_links(in);
  n.tcp.send_buffer_bytes = binary::read_f64(in, "network.tcp");
  n.tcp.congestion_control = get_enum<CongestionControl>(in, "network.tcp");
  n.tcp.connections = get_enum<ConnectionState>(in, "network.tcp");
  n.message_order = get_enum<MessageOrder>(in, "the network");
  n.simgrid_config.resize(binary::read_length(in, "network.simgrid"));
  for (auto& [key, value] : n.simgrid_config)
    key = binary::read_string(in, "network.simgrid"), value = binary::read_string(in, "network.simgrid");
  n.dynamics.resize(binary::read_length(in, "network.dynamics"));
  for (NetworkDynamic& d : n.dynamics) {
    d.target.kind = get_enum<DynamicTarget::Kind>(in, "a dynamic");
    d.target.a = int(binary::read_i64(in, "a dynamic")), d.target.b = int(binary::read_i64(in, "a dynamic"));
    d.quantity = get_enum<DynamicQuantity>(in, "a dynamic");
    d.trace = get_trace(in);
  }
  if (binary::read_bool(in, "network.restart")) {
    RestartPolicy r;
    r.stall_timeout_seconds = binary::read_f64(in, "network.restart");
    r.relaunch_seconds = binary::read_f64(in, "network.restart");
    n.restart = r;
  }
  return n;
}

}  // namespace

void write_request(std::ostream& out, const NetworkSpec& network, const std::vector<const StepGraph*>& graphs,
                   const ReplayOptions& options) {
  binary::write_u64(out, kMagic);
  put(out, network);
  binary::write_bool(out, options.task_times);
  binary::write_f64(out, options.start_seconds);
  binary::write_u64(out, graphs.size());
  for (const StepGraph* g : graphs) g->write(out);
}

Request read_request(std::istream& in) {
  if (binary::read_u64(in, "the replay request") != kMagic)
    throw binary::BinaryFormatError("not a replay request of this build of lowband");
  Request r;
  r.network = get_network(in);
  r.options.task_times = binary::read_bool(in, "the replay options");
  r.options.start_seconds = binary::read_f64(in, "the replay options");
  const uint64_t graphs = binary::read_length(in, "the replay's graphs");
  for (uint64_t i = 0; i < graphs; ++i) r.graphs.push_back(StepGraph::read(in));
  return r;
}

}  // namespace lowband::sim::wire
