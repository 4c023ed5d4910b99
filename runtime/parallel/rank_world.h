#pragma once
// The ranks a trainer drives and how they meet: P threads of one process joined
// by a comm::InProcessWorld (whose baton lets one rank compute at a time), or
// this process's one rank on a given communicator (MPI: `mpirun -np P`), or, for
// a dry run (shapes only), P ranks in turn on the caller's thread, each on a
// comm::NullCommunicator (no rank waits for another: none receives a value). Each
// local rank has a comm::RankLog; a recorded step's graph is assembled from the
// logs (under MPI gathered on rank 0, which alone gets the graph).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/in_process.h"
#include "comm/recording.h"
#include "runtime/scenario/scenario.h"
#include "sim/step_graph.h"

namespace lowband::parallel {

class RankWorld {
 public:
  // In-process when comm is null; else comm.size() must be `ranks`, or
  // InputError(`key`, "... processes (mpirun -np ranks)").
  RankWorld(int ranks, comm::Communicator* comm, const std::string& key);
  struct Dry {};
  RankWorld(int ranks, Dry);

  int ranks() const { return ranks_; }
  // The ranks this process holds, in order (in-process: all).
  const std::vector<int>& local_ranks() const { return local_; }
  // Index of `rank` in local_ranks(), or -1 when another process holds it.
  int local_index(int rank) const;
  bool writer() const { return !external_ || external_->rank() == 0; }

  // fn(rank, communicator) on every local rank (in-process: each on its thread,
  // with the caller's OpenMP thread count). `record`: the logs are cleared first
  // (in an open window: a step_end marked in them instead) and each rank's
  // communicator records into its log.
  void run(const std::function<void(int rank, comm::Communicator&)>& fn, bool record = false);
  // Logs a compute span of `rank` (a local one).
  comm::RankLog& log(int rank) { return logs_[size_t(local_index(rank))]; }

  // The recorded step's graph on the scenario's nodes (parallel.placement); under
  // MPI every process calls it and only rank 0 gets the graph (the others an
  // empty one of P ranks).
  sim::StepGraph assemble_graph(const Scenario& scenario);
  // A step's bookkeeping: the local ranks' kernel seconds summed over the
  // processes and, when `record`, the graph; the wall seconds all that took.
  struct StepBooks {
    double kernel_wall_seconds = 0, record_wall_seconds = 0;
    sim::StepGraph graph;
  };
  // keep_open (with record): the step's graph is part of a window of steps (an
  // outer sync's exchange running beside them, comm::RankLog::step_end): the logs
  // are kept for the next recorded step, and no graph is assembled.
  StepBooks close_step(const Scenario& scenario, double local_kernel_seconds, bool record, bool keep_open = false);
  bool window_open() const { return window_open_; }
  // The open window's graph (its steps so far); an empty graph when none is open.
  sim::StepGraph close_window(const Scenario& scenario);
  // x summed over the processes (bookkeeping, not recorded).
  double sum_over_processes(double x) const;
  // One string per rank, in rank order, on every process: blob(rank) of the local
  // ranks, the others' gathered (bookkeeping).
  std::vector<std::string> gather(const std::function<std::string(int rank)>& blob) const;

 private:
  int ranks_;
  bool dry_ = false;
  comm::Communicator* external_ = nullptr;
  std::unique_ptr<comm::InProcessWorld> world_;
  std::vector<int> local_;
  std::vector<comm::RankLog> logs_;  // per local rank
  bool window_open_ = false;
};

}  // namespace lowband::parallel
