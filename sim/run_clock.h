#pragma once
// A run's steps on a changing network (network.dynamics), on one clock: each step
// replayed where the previous one ended. Under network.restart a step that stalls
// past the timeout sends the run back to its last checkpoint: the clock pays the
// stall, the relaunch and every step since the checkpoint again (replayed again,
// at their new dates), then the step itself (sim/dynamics.h).
//
// `lowband run` (train::Replayer) and `estimate` (its changing_network section)
// both replay through this, so a run and its estimate restart alike.
#include <map>
#include <memory>
#include <vector>

#include "sim/replay.h"

namespace lowband::sim {

struct ClockedStep {
  ReplayResult replay;  // the step's last replay, the one that finished
  // On the run's clock: from the step's first start to its end, the restarts it
  // caused included (so the steps' seconds add up to the run's time).
  double seconds = 0;
  int restarts = 0;  // times the run gave up in this step and went back to the checkpoint
};

class RunClock {
 public:
  // checkpoint_every: the run checkpoints after every step whose number is a
  // multiple of it (0: never, a restart goes back to the run's start). The clock's
  // first step follows a checkpoint: a run's start or a resume, which lowband only
  // does from a checkpoint.
  RunClock(const NetworkSpec& network, int checkpoint_every);

  // The run's next steps in order; run_seconds: the clock when the first starts.
  // Throws what sim::replay_batch throws.
  std::vector<ClockedStep> replay(const std::vector<const StepGraph*>& graphs, double run_seconds);

 private:
  const NetworkSpec& network_;
  int checkpoint_every_;
  int steps_done_ = 0;  // by this clock
  // Under network.restart: the steps since the last checkpoint, to replay again
  // after a restart. Shared copies: a graph repeated in one call is kept once.
  std::vector<std::shared_ptr<const StepGraph>> since_checkpoint_;
};

}  // namespace lowband::sim
