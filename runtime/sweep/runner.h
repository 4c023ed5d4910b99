#pragma once
// Runs a sweep plan: one training per group (runtime/scenario/grid.h), each in a
// worker process (runtime/sweep/worker.h), up to `jobs` at once, writing
// SWEEP_DIR/index.json (runtime/sweep/index.h) atomically at the start and after
// every group, and SWEEP_DIR/sweep.json (the spec as a scenario file with a sweep
// section, what --resume reads). Points already done in SWEEP_DIR (same resolved
// scenario, finished) are skipped. SWEEP_DIR/groups/ holds each training's group
// file, result and log (the training's progress lines).
#include <iosfwd>
#include <string>
#include <vector>

#include "runtime/scenario/grid.h"
#include "runtime/sweep/index.h"

namespace lowband::sweep {

struct SweepOptions {
  std::string out_dir;     // the sweep directory (required)
  int jobs = 0;            // trainings at once; 0: as many as fit (below)
  // OpenMP threads per training; 0: OMP_NUM_THREADS, else cores / jobs. A training
  // resumed from its checkpoint keeps the count the checkpoint records unless this is
  // given (> 0): then it takes this, with a warning (train::RunOptions::threads).
  int threads = 0;
  std::string worker_exe;  // the lowband program, run as `worker_exe sweep-worker GROUP_FILE`
  std::ostream* log = nullptr;  // one line per group start and finish
  // > 0: this process trains that training alone (1-based, as --dry-run numbers
  // them; a cluster's array task, `sweep --resume DIR --training N`), beside other
  // processes training the others: it shares the sweep directory's lock, leaves
  // sweep.json and the others' points as they are, and merges its points into
  // index.json under DIR/.index.lock. A training another process holds (its
  // groups/gN.lock held) is left to it: nothing trained, nothing written.
  int only_training = 0;
  // Write the sweep directory (sweep.json, index.json) and train nothing: what a
  // cluster launcher does before it submits the trainings (SweepResult::todo).
  bool prepare_only = false;
};

// How many trainings run at once and with how many threads each, so that
// jobs x threads <= cores: given jobs -> threads = cores / jobs; given threads (or
// OMP_NUM_THREADS) -> jobs = cores / threads; neither -> one job per core, as many
// as there are trainings, the cores shared among them. Never more jobs than trainings.
struct Parallelism {
  int jobs = 1;
  int threads = 1;
};
Parallelism choose_parallelism(int requested_jobs, int requested_threads, int trainings, int cores);
int available_cores();  // the CPUs this process may run on

struct SweepResult {
  std::vector<PointState> states;
  int failed = 0;       // points
  int skipped = 0;      // points done before this run
  int trainings = 0;    // groups trained by this run
  std::vector<int> todo;  // the trainings (1-based) with points still to run, when it started
};

SweepResult run_sweep(const grid::SweepPlan& plan, const SweepOptions& options);

}  // namespace lowband::sweep
