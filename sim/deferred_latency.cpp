#include "sim/deferred_latency.h"

#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <unordered_set>

namespace lowband::sim::detail {

namespace sg4 = simgrid::s4u;

namespace {

// Small enough that date + factor * latency == date for any date >= latency > 0
// (the Comm starts at least one latency after time 0), large enough that
// factor * latency stays a positive normal double for any latency above 1e-30 s.
constexpr double kLatencyFactor = 0x1p-900;

}  // namespace

bool can_defer_latency(const NetworkSpec& network) {
  return network.model == NetworkModel::ideal && network.simgrid_config.empty();
}

void install_deferred_latency() {
  auto* model = sg4::Engine::get_instance()->get_netzone_root()->get_network_model();
  model->set_lat_factor_cb([](double, const sg4::Host*, const sg4::Host*, const std::vector<sg4::Link*>&,
                              const std::unordered_set<sg4::NetZone*>&) { return kLatencyFactor; });
}

double RouteLatencies::seconds(int src, int dst) {
  const uint64_t key = host_pair_key(src, dst);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  std::vector<sg4::Link*> links;
  double latency = 0;
  hosts_[static_cast<size_t>(src)]->route_to(hosts_[static_cast<size_t>(dst)], links, &latency);
  cache_.emplace(key, latency);
  return latency;
}

}  // namespace lowband::sim::detail
