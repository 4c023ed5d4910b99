#pragma once
// The replays of one network: every step's graph with measured timing; with
// profile timing the graphs repeat, so one replay per distinct graph (keyed by its
// task count and transfer sizes).
//
// On a changing network (network.dynamics) a step's time depends on when it runs:
// each batch is replayed back to back from the run's clock (sim::RunClock,
// restarts included), never cached, and each step also on the nominal network
// (cached as above), for the time lost.
//
// A window's graph (several steps: an outer sync's exchange running beside them,
// parallel::StepRecord::window_open) is replayed whole and split into its
// steps: each step's seconds run from the end of the one before
// (sim::ReplayResult::step_end_seconds); its compute seconds are its own tasks'
// per rank (the replay times the window, not its steps apart); what restarts
// cost goes to the window's last step.
#include <map>
#include <string>
#include <vector>

#include "sim/replay.h"
#include "sim/run_clock.h"

namespace lowband::train {

struct ReplayedStep {
  sim::ReplayResult replay;  // on a changing network, its last replay (the one that finished)
  // The step's time on the run's clock: replay.step_seconds, and on a changing
  // network under network.restart also the restarts it caused (sim/run_clock.h).
  double seconds = 0;
  // What the step took beyond its time on the nominal network (network.dynamics
  // without effect): waits for links and nodes that were down, slower links and
  // nodes, restarts. 0 on a constant network.
  double lost_seconds = 0;
  int restarts = 0;
};

class Replayer {
 public:
  // checkpoint_every: training.checkpoint_every, where a restart goes back to.
  Replayer(const sim::NetworkSpec& network, bool cache, int checkpoint_every);

  // run_seconds: the run's simulated clock when the first graph starts. One
  // result per step: a window's graph gives one per step it holds.
  std::vector<ReplayedStep> replay(const std::vector<const sim::StepGraph*>& graphs, double run_seconds);

  // Partial participation: a round's steps as the replicas ran them, to say who
  // was late (sync/participation.h); run_seconds as replay's. On a changing
  // network the steps replay back to back from run_seconds without
  // network.restart (a replica that stalls is late, the run does not restart
  // for it); on a constant one, as replay's (cached). The run's clock is not moved.
  std::vector<sim::ReplayResult> replay_round(const std::vector<const sim::StepGraph*>& graphs, double run_seconds);

  double wall_seconds = 0;  // spent replaying, all calls

 private:
  std::vector<sim::ReplayResult> replay_constant(const std::vector<const sim::StepGraph*>& graphs);
  static std::string key(const sim::StepGraph& graph);
  const sim::NetworkSpec& network_;
  sim::NetworkSpec nominal_;  // network_ without its dynamics
  bool cache_;
  sim::RunClock clock_;  // of the changing network
  std::map<std::string, sim::ReplayResult> results_;  // of the nominal network
};

}  // namespace lowband::train
