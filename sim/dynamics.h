#pragma once
// The network as it changes: traces of link bandwidth, latency and state and of
// node speed and state, over one run's simulated clock (time 0: the first step
// starts). The typed form of a scenario's `network.dynamics`.
//
// A trace is a factor of the nominal value, piecewise constant in time: a link's
// bandwidth is its scenario bandwidth times the product of every bandwidth trace
// that names it. Factors, not absolute values, so that one trace can apply to
// every link of a heterogeneous network. State traces are 1 (up) or 0 (down).
//
// What each quantity does in the replay (sim/replay_engine.cpp):
//   bandwidth  SimGrid's link bandwidth, changed in flight: a transfer's rate
//              follows it (SimGrid re-solves the sharing at every change).
//   latency    a route's latency when a transfer starts (a transfer already on its
//              way keeps the latency it started with). Model ideal only.
//   state      link down: every transfer whose route crosses it stops moving bytes
//              and resumes where it stopped when the link is up again (TCP
//              retransmits; outages shorter than Linux's retry limit, ~15 min, do
//              not reset the connection). The latency phase is not paused. Node
//              down: its compute stops, and so do its transfers, both ways.
//   speed      a node's compute speed: a task of s seconds takes s / factor.
// So a training step waits for a failed link or node: the time lost is what the
// step took beyond its time on the nominal network. Under network.restart
// (RestartPolicy) it waits at most a timeout, then the run restarts from its last
// checkpoint (sim/run_clock.h).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/words.h"

namespace lowband::sim {

enum class DynamicQuantity { bandwidth, latency, state, speed };

// What a trace applies to. Nodes are numbered as in NetworkSpec.
struct DynamicTarget {
  enum class Kind {
    all,      // every link (bandwidth, latency, state) or every node (speed, state)
    node,     // a node: its compute (speed, state) or its own links (bandwidth,
              // latency, state): its access link (star, clusters), every link at
              // it (full_mesh, explicit_links)
    between,  // the link between a and b: a node pair (full_mesh, explicit_links)
              // or a cluster pair's WAN link (clusters)
  };
  Kind kind = Kind::all;
  int a = -1, b = -1;  // node: a; between: a < b
};

struct TracePoint {
  double seconds = 0;  // from the run's start
  double value = 1;
};

// How a trace is made. Generated traces are deterministic functions of their
// parameters (and seed): the same trace on every machine, in every process.
struct TraceSpec {
  enum class Kind {
    points,       // `steps` or `file`: value 1 before the first point, each point's
                  // value from its time on
    daily,        // 1 − (1 − low)·(1 + cos(2π(t − low_at)/period))/2, held for `sample`
    random_walk,  // from 1, every `every`: factor·exp(sigma·N(0,1)), clamped to [min, max]
    outages,      // up for Exp(mean_up), `value` for Exp(mean_down), repeated
  };
  Kind kind = Kind::points;
  std::vector<TracePoint> points;                         // points
  double low = 1, low_at_s = 72000, period_s = 86400;     // daily
  double sample_s = 600;                                  // daily
  double every_s = 60, sigma = 0, min = 1, max = 1;       // random_walk
  double mean_up_s = 3600, mean_down_s = 600, value = 0;  // outages
  uint64_t seed = 0;                                      // random_walk, outages
};

struct NetworkDynamic {
  DynamicTarget target;
  DynamicQuantity quantity = DynamicQuantity::bandwidth;
  TraceSpec trace;
};

// network.restart: what a run does when a step cannot go on. A step stalls while
// any of its transfers or compute tasks is held by a node or link that is down;
// once it has stalled for stall_timeout_seconds without a break (a collective's
// watchdog, as NCCL's), the run gives up on the step, relaunches (the processes
// start again and load the last checkpoint: relaunch_seconds) and redoes every
// step since that checkpoint. Without it a step waits as long as the outage lasts.
struct RestartPolicy {
  double stall_timeout_seconds = 600;
  double relaunch_seconds = 0;
};

const Words<DynamicQuantity>& dynamic_quantity_words();  // as a network.dynamics entry's key spells it
const char* to_string(DynamicQuantity quantity);
// Whether a trace takes a link or node down: what network.restart acts on.
bool takes_anything_down(const std::vector<NetworkDynamic>& dynamics);
// How long a state trace stays down at a time: its longest outage for points
// (steps, file), the mean outage for generated outages; 0 for any other trace.
double typical_longest_outage_seconds(const TraceSpec& state_trace);

// network.restart's bound on the work an outage implies: each relaunch is a
// replay of its own, and an outage of D seconds relaunches about
// D / (stall_timeout + relaunch) times. More than this many is refused when the
// scenario is read, and stops a replay that gets there anyway (a random outage's
// long tail) with the same message.
inline constexpr double kMaxRelaunchesPerOutage = 10000;

// A trace's values over time, generated as far as asked.
class Trace {
 public:
  explicit Trace(TraceSpec spec);
  double value_at(double seconds);
  // The first time after `seconds` at which the value may change; +inf if never.
  double next_change_after(double seconds);

 private:
  void extend_past(double seconds);  // generates points until one lies beyond `seconds`
  size_t index_at(double seconds);   // the last point at or before `seconds`, or npos
  TraceSpec spec_;
  std::vector<TracePoint> points_;
  bool complete_ = false;  // no more points will come
  uint64_t rng_state_ = 0;
  double walk_ = 1;
};

inline constexpr double kNever = std::numeric_limits<double>::infinity();

}  // namespace lowband::sim
