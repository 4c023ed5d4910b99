#pragma once
// The SimGrid side of sim::replay (internal to sim/). simulate() creates the
// process's one SimGrid engine, so it may run at most once per process: replay.cpp
// calls it in a forked child.
#include <vector>

#include "sim/network.h"
#include "sim/step_graph.h"

namespace lowband::sim::detail {

struct TaskTimes {
  std::vector<double> start_seconds;  // by TaskId, relative to the graph's own start
  std::vector<double> finish_seconds;
};

std::vector<TaskTimes> simulate(const NetworkSpec& network, const std::vector<const StepGraph*>& graphs);

}  // namespace lowband::sim::detail
