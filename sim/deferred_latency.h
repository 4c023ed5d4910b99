#pragma once
// The latency phase of a transfer, kept outside SimGrid (internal to sim/).
//
// SimGrid 3.32 keeps every started host-to-host Comm in one std::list and scans
// all of it when any one completes, so replay time grows with the number of
// transfers in flight (at 512 context ranks that scan was half the replay). A
// transfer spends its route latency doing nothing in SimGrid's CM02 model: its
// variable has sharing penalty 0 (no share of any link) until the latency is paid,
// then takes penalty = route latency. So under `ideal` the replay waits the route
// latency on a timer of its own and only then starts the Comm, with a latency
// factor of 2^-900 (CM02 scales the latency phase by it, not the sharing penalty
// or the TCP-gamma bound, which use the unscaled route latency): the Comm enters
// SimGrid already sharing as it would have at that date, and SimGrid holds only
// the transfers that are moving bytes.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/network.h"

namespace simgrid::s4u {
class Host;
}

namespace lowband::sim::detail {

// A directed host pair as one key (route caches).
inline uint64_t host_pair_key(int src, int dst) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) | static_cast<uint32_t>(dst);
}

// Whether replay may defer latency on this network: model ideal (tcp's latency
// factor depends on the connection's state when a message starts) and no
// `network.simgrid` settings (one may set its own latency factor).
bool can_defer_latency(const NetworkSpec& network);

// Installs the latency factor; after build_platform, before any Comm starts.
void install_deferred_latency();

// Route latency between hosts, as SimGrid sums it for a Comm, cached per pair.
class RouteLatencies {
 public:
  explicit RouteLatencies(const std::vector<simgrid::s4u::Host*>& hosts) : hosts_(hosts) {}
  double seconds(int src, int dst);

 private:
  const std::vector<simgrid::s4u::Host*>& hosts_;
  std::unordered_map<uint64_t, double> cache_;
};

}  // namespace lowband::sim::detail
