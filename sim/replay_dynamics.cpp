#include "sim/replay_dynamics.h"

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/deferred_latency.h"

namespace lowband::sim::detail {

namespace sg4 = simgrid::s4u;

namespace {

bool on_links(DynamicQuantity q, const DynamicTarget& t) {
  return q == DynamicQuantity::bandwidth || q == DynamicQuantity::latency ||
         (q == DynamicQuantity::state && t.kind != DynamicTarget::Kind::node);
}

// The names build_platform gave the links a target names (sim/platform.cpp).
std::vector<std::string> link_names(const NetworkSpec& net, const DynamicTarget& t) {
  using Kind = DynamicTarget::Kind;
  std::vector<std::string> names;
  auto pair_name = [](const char* prefix, int a, int b) {
    return prefix + std::to_string(a) + "_" + std::to_string(b);
  };
  switch (net.topology) {
    case Topology::star:
    case Topology::clusters: {
      if (t.kind == Kind::between) {
        names.push_back(pair_name("wan", t.a, t.b));
        break;
      }
      for (int n = 0; n < net.nodes; ++n)
        if (t.kind == Kind::all || n == t.a) names.push_back("access" + std::to_string(n));
      if (t.kind == Kind::all && net.topology == Topology::clusters)
        for (size_t a = 0; a < net.clusters.size(); ++a)
          for (size_t b = a + 1; b < net.clusters.size(); ++b)
            names.push_back(pair_name("wan", static_cast<int>(a), static_cast<int>(b)));
      break;
    }
    case Topology::full_mesh:
      for (int a = 0; a < net.nodes; ++a)
        for (int b = a + 1; b < net.nodes; ++b)
          if (t.kind == Kind::all || (t.kind == Kind::node && (a == t.a || b == t.a)) ||
              (t.kind == Kind::between && a == t.a && b == t.b))
            names.push_back(pair_name("pair", a, b));
      break;
    case Topology::explicit_links:
      for (size_t i = 0; i < net.pair_links.size(); ++i) {
        const int a = std::min(net.pair_links[i].a, net.pair_links[i].b);
        const int b = std::max(net.pair_links[i].a, net.pair_links[i].b);
        if (t.kind == Kind::all || (t.kind == Kind::node && (a == t.a || b == t.a)) ||
            (t.kind == Kind::between && a == t.a && b == t.b))
          names.push_back("link" + std::to_string(i));
      }
      break;
  }
  return names;
}

}  // namespace

ReplayDynamics::ReplayDynamics(const NetworkSpec& network, const std::vector<sg4::Host*>& hosts,
                               double start_seconds)
    : hosts_(hosts), start_seconds_(start_seconds) {
  node_speed_.assign(hosts.size(), 1.0);
  node_state_.assign(hosts.size(), 1.0);
  for (const NetworkDynamic& d : network.dynamics) {
    Series s{Trace(d.trace), d.quantity, {}, {}};
    if (on_links(d.quantity, d.target)) {
      for (const std::string& name : link_names(network, d.target))
        for (const char* half : {"_UP", "_DOWN"}) {
          sg4::Link* link = sg4::Engine::get_instance()->link_by_name_or_null(name + half);
          if (!link) throw std::logic_error("sim::replay: no SimGrid link named " + name + half);
          s.links.push_back(link);
          links_.emplace(link, LinkFactors{link->get_bandwidth()});
        }
      stops_links_ = stops_links_ || d.quantity == DynamicQuantity::state;
    } else {
      for (int n = 0; n < network.nodes && n < static_cast<int>(hosts.size()); ++n)
        if (d.target.kind == DynamicTarget::Kind::all || n == d.target.a) s.nodes.push_back(n);
    }
    changes_latency_ = changes_latency_ || d.quantity == DynamicQuantity::latency;
    series_.push_back(std::move(s));
  }
}

double ReplayDynamics::node_speed(int node) const {
  return node_speed_[static_cast<size_t>(node)] * node_state_[static_cast<size_t>(node)];
}

const std::vector<sg4::Link*>& ReplayDynamics::route(int src, int dst) {
  const uint64_t key = host_pair_key(src, dst);
  auto it = routes_.find(key);
  if (it != routes_.end()) return it->second;
  std::vector<sg4::Link*> links;
  double latency = 0;
  hosts_[static_cast<size_t>(src)]->route_to(hosts_[static_cast<size_t>(dst)], links, &latency);
  return routes_.emplace(key, std::move(links)).first->second;
}

bool ReplayDynamics::transfer_stopped(int src, int dst) {
  if (node_down(src) || node_down(dst)) return true;
  if (!stops_links_) return false;
  for (sg4::Link* link : route(src, dst)) {
    auto it = links_.find(link);
    if (it != links_.end() && it->second.state == 0) return true;
  }
  return false;
}

double ReplayDynamics::route_latency_seconds(int src, int dst) {
  double latency = 0;
  for (sg4::Link* link : route(src, dst)) {
    auto it = links_.find(link);
    latency += link->get_latency() * (it == links_.end() ? 1.0 : it->second.latency);
  }
  return latency;
}

bool ReplayDynamics::apply_at(double run_seconds) {
  bool changed = false;
  for (Series& s : series_) {
    const double v = s.trace.value_at(run_seconds);
    if (v == s.value) continue;  // never true for the first value (NaN)
    s.value = v;
    changed = true;
  }
  if (!changed) return false;
  // Recompute every product from scratch: changes are rare, and a product
  // rebuilt in one order is the same whichever trace changed.
  for (auto& [link, f] : links_) f.bandwidth = f.latency = f.state = 1.0;
  std::fill(node_speed_.begin(), node_speed_.end(), 1.0);
  std::fill(node_state_.begin(), node_state_.end(), 1.0);
  for (const Series& s : series_) {
    for (sg4::Link* link : s.links) {
      LinkFactors& f = links_.at(link);
      if (s.quantity == DynamicQuantity::bandwidth) f.bandwidth *= s.value;
      if (s.quantity == DynamicQuantity::latency) f.latency *= s.value;
      if (s.quantity == DynamicQuantity::state) f.state *= s.value;
    }
    for (int n : s.nodes) {
      if (s.quantity == DynamicQuantity::speed) node_speed_[static_cast<size_t>(n)] *= s.value;
      if (s.quantity == DynamicQuantity::state) node_state_[static_cast<size_t>(n)] *= s.value;
    }
  }
  for (auto& [link, f] : links_) {
    const double bandwidth = f.nominal_bandwidth * f.bandwidth;
    if (link->get_bandwidth() != bandwidth) link->set_bandwidth(bandwidth);
  }
  return true;
}

void ReplayDynamics::schedule_after(double run_seconds) {
  double next = kNever;
  for (Series& s : series_) next = std::min(next, s.trace.next_change_after(run_seconds));
  if (next == kNever) return;
  // The timer fires at SimGrid's clock; the traces are read at the exact date
  // scheduled, never at a clock value that rounding put a hair before it.
  const double at = std::max(next - start_seconds_, sg4::Engine::get_clock());
  timer_ = simgrid::kernel::timer::Timer::set(at, [this, next]() {
    timer_ = nullptr;  // SimGrid frees it after this call
    const bool changed = apply_at(next);
    schedule_after(next);
    if (changed && on_change_) on_change_();
  });
}

void ReplayDynamics::start(std::function<void()> on_change) {
  on_change_ = std::move(on_change);
  const double now = start_seconds_ + sg4::Engine::get_clock();
  apply_at(now);
  schedule_after(now);
  on_change_();  // a new graph's ranks start at nominal speed: tell them
}

bool ReplayDynamics::changes_later() {
  const double now = start_seconds_ + sg4::Engine::get_clock();
  return std::any_of(series_.begin(), series_.end(), [&](Series& s) { return s.trace.next_change_after(now) != kNever; });
}

void ReplayDynamics::stop() {
  if (timer_) timer_->remove();
  timer_ = nullptr;
  on_change_ = nullptr;
}

}  // namespace lowband::sim::detail
