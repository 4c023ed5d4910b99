#pragma once
// network.dynamics inside a replay (internal to sim/; semantics in sim/dynamics.h).
//
// Owns one SimGrid timer at the next date any trace changes, and only while a step
// graph is running (start/stop), so that the engine returns when the graph is done
// instead of running on through the trace. At each change it sets the links'
// SimGrid bandwidth, and tells the replay (on_change) to re-read node speeds and
// which transfers must stop or go on. Dates are the run's: SimGrid's clock plus
// the replay's start_seconds, so a run replayed in several processes (one per
// batch of steps) sees one continuous trace.
#include <functional>
#include <limits>
#include <unordered_map>
#include <vector>

#include "sim/dynamics.h"
#include "sim/network.h"

namespace simgrid::s4u {
class Host;
class Link;
}  // namespace simgrid::s4u
namespace simgrid::kernel::timer {
class Timer;
}

namespace lowband::sim::detail {

class ReplayDynamics {
 public:
  // After build_platform. start_seconds: the run's date at SimGrid's clock 0.
  ReplayDynamics(const NetworkSpec& network, const std::vector<simgrid::s4u::Host*>& hosts, double start_seconds);
  bool empty() const { return series_.empty(); }

  // Applies every trace's value now and keeps them applied until stop().
  void start(std::function<void()> on_change);
  void stop();
  // Whether any trace changes after now (if not, what is down stays down).
  bool changes_later();

  double node_speed(int node) const;  // speed factor, 0 while the node is down
  bool node_down(int node) const { return node_state_[static_cast<size_t>(node)] == 0; }
  // Whether a transfer src -> dst may not move bytes now (a node or a link of its route down).
  bool transfer_stopped(int src, int dst);
  bool changes_latency() const { return changes_latency_; }
  // The route latency a transfer starting now pays (latency traces applied).
  double route_latency_seconds(int src, int dst);

 private:
  struct Series {
    Trace trace;
    DynamicQuantity quantity;
    std::vector<simgrid::s4u::Link*> links;  // bandwidth, latency, state on links
    std::vector<int> nodes;                  // speed, state on nodes
    double value = std::numeric_limits<double>::quiet_NaN();  // none yet: the first apply_at sets it
  };
  struct LinkFactors {  // the products of the traces on one link
    double nominal_bandwidth = 0;
    double bandwidth = 1, latency = 1, state = 1;
  };
  bool apply_at(double run_seconds);  // whether any value changed
  void schedule_after(double run_seconds);
  const std::vector<simgrid::s4u::Link*>& route(int src, int dst);

  const std::vector<simgrid::s4u::Host*>& hosts_;
  double start_seconds_;
  std::vector<Series> series_;
  std::function<void()> on_change_;
  simgrid::kernel::timer::Timer* timer_ = nullptr;
  bool changes_latency_ = false;
  bool stops_links_ = false;  // a state trace names links: transfers look at their route
  std::unordered_map<simgrid::s4u::Link*, LinkFactors> links_;  // every link a trace names
  std::vector<double> node_speed_, node_state_;
  std::unordered_map<uint64_t, std::vector<simgrid::s4u::Link*>> routes_;
};

}  // namespace lowband::sim::detail
