#pragma once
// The SimGrid platform for a NetworkSpec (semantics in sim/network.h).
//
// validate_network() checks a spec without SimGrid and throws lowband::InputError
// naming the place ("network.node_links[2].node", or "network" for a node that
// cannot reach another). build_platform() needs a live simgrid::s4u::Engine whose
// configuration was not yet frozen: it pins the network model first, then builds
// zones, hosts and links. One host per node, named "n<i>", at kHostFlopsPerSecond.
#include <vector>

#include "sim/network.h"

namespace simgrid::s4u {
class Host;
}

namespace lowband::sim {

// Every host's nominal speed. Replay times compute tasks itself (processor sharing
// per rank, on SimGrid's clock; see sim/replay_engine.cpp), so it only matters to
// code that runs SimGrid Execs on this platform: a task of s seconds is then
// s * kHostFlopsPerSecond flops, far above SimGrid's work-amount precision (1e-5).
inline constexpr double kHostFlopsPerSecond = 1e9;

void validate_network(const NetworkSpec& network);

// Sets "network/model" and friends for network.model. Must run before any zone exists.
void configure_network_model(const NetworkSpec& network);

// The tcp model keeps one connection per directed host pair (sim/tcp_model.h);
// this starts every one afresh as network.tcp.connections says (a new replay).
void reset_tcp_connections();

// The next message to start (its SimGrid Comm, synchronously) waited on its stream since
// ready_s (message_order fifo, connection); NaN after it: the tcp model then lets its
// latency overlap the message before (sim/platform.cpp, tcp_latency_factor).
void set_tcp_queued_since(double ready_s);

// Validates, configures the model and builds the platform; returns the hosts by node.
std::vector<simgrid::s4u::Host*> build_platform(const NetworkSpec& network);

}  // namespace lowband::sim
