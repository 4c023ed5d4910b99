#pragma once
// The SimGrid side of sim::replay (internal to sim/). simulate() creates the
// process's one SimGrid engine, so it may run at most once per process: it runs
// in a child of the replay process (replay_process.h, replay_main.cpp).
#include <iosfwd>
#include <string>
#include <vector>

#include "sim/network.h"
#include "sim/step_graph.h"

namespace lowband::sim::detail {

// What one graph's replay gives, relative to the graph's own start: enough for
// ReplayResult (replay.cpp's summarize), and each task's times only when asked
// (at 512 context ranks they are 170 MB a graph).
struct TaskTimes {
  std::vector<double> rank_finish_seconds;  // last finish of a task the rank runs, sends or receives
  // Per rank, the length of the union of its compute tasks' [start, finish].
  std::vector<double> busy_seconds;
  // network.restart: when the graph gave up, stalled past the timeout; -1: it finished.
  double gave_up_seconds = -1;
  std::vector<double> start_seconds;  // by TaskId; only with task_times
  std::vector<double> finish_seconds;
  std::vector<double> step_end_seconds;  // finish of each StepGraph::step_ends() task, in order
};

// start_seconds: the run's date at SimGrid's clock 0, where network.dynamics is read.
// Under network.restart the result ends with the first graph that gave up.
std::vector<TaskTimes> simulate(const NetworkSpec& network, const std::vector<const StepGraph*>& graphs,
                                bool task_times, double start_seconds);

// The replay process's whole work: the request (replay_wire.h) read from
// `request`, simulated, and the reply's bytes (figures, or the error) that
// replay.cpp reads back.
std::string reply_to(std::istream& request);
// A reply that says the replay failed: `message`, as an error (not bad input).
std::string error_reply(const std::string& message);

}  // namespace lowband::sim::detail
