#pragma once
// Lower bounds on a step graph's replay that no schedule can beat on a network:
// what the graph's transfers must push over each link, and the chain of their
// latencies. Neither runs SimGrid: the links and routes are the ones
// sim/platform.cpp builds, written out per topology.
//
//  Links, per direction (SimGrid's split-duplex links: each direction has its own
//  capacity; UP carries Link::upload(), DOWN Link::bandwidth_bytes_per_s):
//   star            node n's uplink (its messages out) and downlink (in); a message
//                   crosses the sender's uplink and the receiver's downlink
//   full_mesh       one link per ordered pair a -> b; a message crosses it alone
//   clusters        access up/down links as on a star, and one WAN link per ordered
//                   cluster pair; a message between clusters crosses the sender's
//                   uplink, the WAN link and the receiver's downlink
//   explicit_links  routes are SimGrid's fewest-hop choice among ties, which this
//                   does not reproduce; so each node's cut instead: "node n's links
//                   out" (the sum of its links' capacities away from n) and "in".
//                   Every message leaves its source's cut and enters its
//                   destination's, whatever its route, so the bound holds.
//  A transfer within a node (source = destination) crosses no link.
//
// Bandwidth bound: max over links of (bytes routed over it) / (its capacity):
// a link moves at most its capacity per second. Latency bound: the longest chain
// of dependent tasks with compute free and each transfer its route's latency
// (explicit_links: the least-latency path); the replay pays at least each
// transfer's route latency before it delivers (ideal: exactly; tcp: the latency
// factor can shorten the latency phase only by the time the first window saves,
// never below L + S/B in all). Both hold under `ideal` and `tcp` with the default
// SimGrid settings; a `network.simgrid` override of the bandwidth or latency
// factors can break them.
#include <map>
#include <string>
#include <vector>

#include "sim/network.h"
#include "sim/step_graph.h"

namespace lowband::sim {

struct DirectedLink {
  std::string name;  // "node 3's uplink", "link 2->5", "WAN cluster 0->1", "node 4's links out"
  double bandwidth_bytes_per_s = 0;
};

class NetworkLinks {
 public:
  explicit NetworkLinks(const NetworkSpec& network);

  const std::vector<DirectedLink>& links() const { return links_; }
  // The links a message src -> dst crosses (indices into links()); none within a node.
  void route(int src, int dst, std::vector<int>& out) const;
  // Its route's latency (explicit_links: the least-latency path's).
  double route_latency(int src, int dst) const;

 private:
  int up(int node) const { return 2 * node; }
  int down(int node) const { return 2 * node + 1; }
  int cluster_of(int node) const { return cluster_of_[size_t(node)]; }
  void add_pair_links(int count, const Link& all, const std::vector<PairLink>& overrides, const std::string& name);

  NetworkSpec net_;
  std::vector<DirectedLink> links_;
  std::vector<double> access_latency_;      // star, clusters: per node
  std::vector<int> cluster_of_;             // clusters: per node
  std::vector<int> pair_index_;             // full_mesh, explicit (-1: not listed): nodes²; clusters: clusters² (WAN links)
  std::vector<double> pair_latency_;        // the same, symmetric
  std::vector<std::vector<double>> explicit_latency_;  // explicit_links: least latency from each node
};

struct LinkLoad {
  std::vector<double> bytes;  // per link of NetworkLinks::links()
};

// Adds `weight` × the bytes of each of the graph's transfers to every link on its route.
void add_link_load(const NetworkLinks& links, const StepGraph& graph, double weight, LinkLoad& load);

struct BusiestLink {
  int link = -1;  // -1: no transfer crosses a link
  std::string name;
  double bytes = 0, bandwidth_bytes_per_s = 0, seconds = 0;
};
// The link with the most seconds of bytes / capacity (the first of equals).
BusiestLink busiest_link(const NetworkLinks& links, const LinkLoad& load);

// Adds `weight` × the bytes of the graph's transfers that cross `link`, by kind tag.
void add_link_bytes_by_kind(const NetworkLinks& links, const StepGraph& graph, int link, double weight,
                            std::map<std::string, double>& bytes);

// The longest chain through the graph with compute free and each transfer its
// route latency (node-local transfers 0).
double latency_chain_seconds(const NetworkLinks& links, const StepGraph& graph);

}  // namespace lowband::sim
