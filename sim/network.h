#pragma once
// What the network looks like: the typed form of a scenario's "network" section.
// Units are SI: bytes per second, seconds. Nodes are numbered 0..nodes-1 and rank i
// runs on node i.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/words.h"
#include "sim/dynamics.h"

namespace lowband::sim {

// Which SimGrid network model times the transfers. Echoed in every output.
//  ideal: CM02, no ACK cross-traffic, no TCP window cap: alpha-beta times exactly.
//  tcp:   CM02 with lowband's TCP model (sim/tcp_model.h): header overhead, a window
//         cap from the send buffer, per-connection handshake and slow start; fitted
//         to real Linux TCP (analysis/network-fidelity/).
enum class NetworkModel { ideal, tcp };

enum class CongestionControl { cubic, bbr };

// Messages from one node to another of the same kind ("kv", "grad_sync", ...) that
// are ready to move bytes at once:
//  concurrent: each its own flow, sharing the path (the default; every analysis
//              page's figures)
//  fifo:       one stream per (source, destination, kind): a message's bytes wait
//              for the previous message's, as on one TCP connection (its latency
//              overlaps; under tcp, where SimGrid pays latency in the flow, it is
//              paid after). After an outage a rank's backlog then drains in order
//              instead of every message arriving late together.
//  connection: one stream per (source, destination) whatever the kind: one TCP
//              connection per pair of ranks, as MPI's TCP transport keeps. Under tcp
//              a queued message follows the bytes before it (its latency overlaps
//              theirs; sim/tcp_model.h, tcp_backlog_increment_seconds).
enum class MessageOrder { concurrent, fifo, connection };
// How each directed pair's connection starts a replay: warm (open, window open: the
// steady state of a training run, never restarting), fresh (opened by its first
// message there) or idle (open but idle since long before: its first message restarts
// slow start from the initial window, without a handshake). Fresh and idle connections
// restart slow start after each idle period longer than the RTO, as Linux does by
// default (net.ipv4.tcp_slow_start_after_idle=1; sim/tcp_model.h).
enum class ConnectionState { warm, fresh, idle };

struct TcpSettings {  // network.tcp; only the tcp model reads it
  double send_buffer_bytes = 4194304;  // net.ipv4.tcp_wmem's maximum (Linux's default, 4 MiB)
  CongestionControl congestion_control = CongestionControl::cubic;
  ConnectionState connections = ConnectionState::warm;
};

struct Link {
  double bandwidth_bytes_per_s = 0;
  double latency_s = 0;
  // Access links (star, clusters) only: the node's upload, its messages out
  // (SimGrid's UP half of the split-duplex link); bandwidth_bytes_per_s is then
  // its download. 0: the same both ways.
  double upload_bytes_per_s = 0;
  double upload() const { return upload_bytes_per_s > 0 ? upload_bytes_per_s : bandwidth_bytes_per_s; }
};

enum class Topology {
  star,       // each node has its own full-duplex access link to one switch;
              // a message crosses the sender's (its upload) and the receiver's
              // (its download) access links
  full_mesh,  // one full-duplex link per pair of nodes
  clusters,   // stars (fast access links) whose switches are joined pairwise by WAN links
  explicit_links,  // only the listed node-to-node links; routes take the fewest hops
};

struct NodeLink {  // a per-node override of its access link (star, clusters)
  int node = 0;
  Link link;
};

struct PairLink {  // a per-pair override (full_mesh: node pair; clusters: cluster pair)
  int a = 0, b = 0;
  Link link;
};

struct Cluster {
  int nodes = 0;
  Link access;  // each node's access link inside this cluster
};

struct NetworkSpec {
  // network.source: where the figures come from and when they were measured
  // (documentation, echoed in scenario.json; nothing reads it).
  std::string source;
  NetworkModel model = NetworkModel::ideal;
  Topology topology = Topology::star;
  int nodes = 0;

  Link link;                         // star: every access link; full_mesh: every pair link
  std::vector<NodeLink> node_links;  // star, clusters: per-node access overrides
  std::vector<PairLink> pair_links;  // full_mesh: per node-pair overrides; explicit_links: the links

  std::vector<Cluster> clusters;     // clusters: nodes are numbered cluster by cluster
  Link wan;                          // clusters: link between each pair of clusters
  std::vector<PairLink> wan_links;   // clusters: per cluster-pair overrides

  TcpSettings tcp;
  MessageOrder message_order = MessageOrder::concurrent;
  // network.simgrid, for experts: SimGrid settings ("network/maxmin-selective-update" ->
  // "yes"), applied after the model's own, so they can override them. Echoed by describe().
  std::vector<std::pair<std::string, std::string>> simgrid_config;
  // network.dynamics: how links and nodes change over the run (sim/dynamics.h).
  // Empty: a constant network, each step replayed alone (and cached).
  std::vector<NetworkDynamic> dynamics;
  // network.restart: give up on a stalled step and restart from the last checkpoint
  // (sim/dynamics.h). Absent: a step waits for whatever is down.
  std::optional<RestartPolicy> restart;
};

// The words network.model, network.topology, network.tcp.congestion_control,
// network.tcp.connections and network.message_order are spelled with.
const Words<NetworkModel>& network_model_words();
const Words<Topology>& topology_words();  // "explicit" for explicit_links
const Words<CongestionControl>& congestion_control_words();
const Words<ConnectionState>& connection_state_words();
const Words<MessageOrder>& message_order_words();

const char* to_string(NetworkModel model);
const char* to_string(Topology topology);
const char* to_string(CongestionControl cc);
const char* to_string(ConnectionState connections);
// One line for humans, e.g. "star, 8 nodes, 300 Mbps / 1 ms per access link (path
// latency 2 ms), model ideal"; latencies say whether they are per link or per path.
std::string describe(const NetworkSpec& network);

}  // namespace lowband::sim
