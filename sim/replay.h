#pragma once
// Replaying a step graph on a network: the simulated time of one training step.
//
// Each task starts as soon as all its dependencies have finished. Compute tasks run
// on their rank's host; two that are ready at once share it (each at half speed).
// Transfers are SimGrid flows from the source's host to the destination's; a
// transfer to oneself is free (it finishes when it starts). Independent tasks
// overlap, so communication hides behind compute only where the graph allows it.
// Flows sharing a link split it as SimGrid's model says: under `ideal` (CM02) in
// inverse proportion to each flow's route latency, so equally only between flows of
// equal route latency (every flow of a homogeneous star or mesh).
//
// Each call runs SimGrid in a process of its own (SimGrid's engine is a process
// singleton whose configuration and clock cannot be reset), so calls are
// independent and can use different networks and models in one process. The
// process is a child of lowband-replay (replay_process.h): a program of one
// thread that lowband spawns once and keeps, sent the network and the graphs
// through a pipe (replay_wire.h), never a fork of lowband itself (whose threads
// may have held a lock at the fork). It is found at $LOWBAND_REPLAY, else beside
// the running program, else where the build put it.
//
// Under `ideal` a transfer waits its route latency on a replay timer and only then
// becomes a SimGrid Comm, sharing at once as CM02 would have it share at that date
// (sim/deferred_latency.h): the same times, fewer Comms in flight.
//
// network.dynamics (sim/dynamics.h) changes links and nodes on the run's clock
// (ReplayOptions::start_seconds; sim/replay_dynamics.h); network.message_order
// fifo queues one kind of message between one pair of nodes, connection every kind
// (sim/network.h).
//
// A message of no bytes (after llround) whose latency the replay waits itself
// finishes when that latency is paid, without a Comm: SimGrid would finish it at
// that date too. The replay process sends back only the figures below (and each
// task's times when asked), not per-task arrays of the graph's size.
//
// Cost: the MoS paper step at 512 context ranks (10.5 million tasks, 6.3 million
// transfers, 5.8 million of them Comms) replays in about 20 s on a 2-core AMD EPYC
// (scripts/experiments/estimate-scaling.sh; bench/bench_estimate_phases splits
// the whole estimate into dry run, assembly and replay). About half of that is
// SimGrid's own per-Comm work, a fifth of it SimGrid 3.32 scanning its one
// std::list of every in-flight host-to-host Comm whenever one completes (a
// std::set from SimGrid 3.33 on); what a Comm costs inside SimGrid is the floor.
#include <vector>

#include "sim/network.h"
#include "sim/step_graph.h"

namespace lowband::sim {

struct ReplayOptions {
  bool task_times = false;  // also return each task's start and finish time
  // The run's date when the first graph starts: where network.dynamics is read.
  // On a changing network the graphs of a batch run back to back on one clock,
  // each starting where the previous one ended (a run's steps, in order).
  double start_seconds = 0;
};

struct ReplayResult {
  std::vector<double> rank_finish_seconds;        // last finish of a task the rank runs, sends or receives
  double step_seconds = 0;                        // max of rank_finish_seconds
  std::vector<double> rank_compute_busy_seconds;  // length of the union of the rank's compute intervals
  std::vector<double> rank_exposed_comm_seconds;  // finish - compute busy, per rank
  double exposed_comm_seconds = 0;                // step_seconds - max over ranks of compute busy
  // network.restart: the step stalled past the timeout and was given up after
  // step_seconds (a batch ends with it). The other figures are then partial.
  bool gave_up = false;
  // A graph of several steps (StepGraph::step_ends): when each step but the last
  // ended, from the graph's start; empty for a graph of one step.
  std::vector<double> step_end_seconds;
  std::vector<double> task_start_seconds;         // by TaskId; only with ReplayOptions::task_times
  std::vector<double> task_finish_seconds;
};

// Throws lowband::InputError for a bad network (see validate_network) or a graph
// with more ranks than the network has nodes ("network.nodes"); std::runtime_error
// if the replay process fails.
ReplayResult replay(const NetworkSpec& network, const StepGraph& graph, const ReplayOptions& options = {});

// Several graphs on one platform, one after the other (each starts on an idle
// network, when the previous one ended; its times are its own, from its start):
// one replay process and one platform build for all. Under network.restart the
// results stop at the first graph that gave up (ReplayResult::gave_up).
std::vector<ReplayResult> replay_batch(const NetworkSpec& network, const std::vector<StepGraph>& graphs,
                                       const ReplayOptions& options = {});
std::vector<ReplayResult> replay_batch(const NetworkSpec& network, const std::vector<const StepGraph*>& graphs,
                                       const ReplayOptions& options = {});

}  // namespace lowband::sim
