#pragma once
// Partial participation (parallel.data_sync.deadline_seconds, quorum): which
// replicas make a round of DiLoCo, from when each one is ready — has finished
// the round's inner steps, on the replayed clock (train/run.cpp asks the replay).
//
// The round closes at the earliest of: the last replica ready; the first ready
// plus deadline_seconds; the quorum-th ready. A replica ready by then makes it;
// the others are dropped from the round (outer_sync.h: they contribute nothing,
// the mean is over those that made it). The participants then idle until the
// close: wait_seconds, from the last of them ready.
#include <vector>

#include "runtime/scenario/scenario.h"

namespace lowband::sync {

struct RoundClose {
  std::vector<bool> made_it;  // per replica
  double close_seconds = 0;   // from the round's start
  double wait_seconds = 0;    // close − the last participant's ready
  int participants() const;
};

// ready_seconds: per replica, from the round's start (+inf: never ready).
RoundClose close_round(const DataSyncConfig& config, const std::vector<double>& ready_seconds);

}  // namespace lowband::sync
