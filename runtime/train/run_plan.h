#pragma once
// What `lowband run` settles before it builds anything: the run directories and
// their locks, the checkpoint it resumes from, the number of steps, the retime
// targets and the OpenMP thread count. Every input error surfaces here, before a
// kernel runs or a file is written.
#include <optional>
#include <string>
#include <vector>

#include "runtime/scenario/scenario.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/run.h"
#include "runtime/train/run_dir.h"

namespace lowband::train {

struct RunPlan {
  RunOptions options;             // out_dir resolved (runs/<name>-<stamp> when none was given)
  bool writer = true;             // this process writes the directories (MPI: rank 0 alone)
  std::vector<DirLock> locks;     // one per directory written, held for the whole run
  std::optional<Checkpoint> resumed;
  int steps = 0;                  // the run's length (a resumed run's: the recorded one)
  std::vector<RetimeTarget> retimes;  // out_dir resolved
  int threads = 0;                // OpenMP threads to train with
  std::string threads_message;    // "" or one line for the log (resume_threads)
  bool threads_warning = false;   // threads_message warns the numbers may differ

  int start_step() const { return resumed ? resumed->steps_done : 0; }
  bool already_complete() const { return resumed && resumed->complete; }
};

// Throws InputError naming the flag or key: --steps, training.steps, --threads, a
// retime target that trains differently, a directory in use or not restartable, a
// checkpoint that does not fit the scenario. A plan of a run that had ended
// (already_complete) resolves no thread count.
RunPlan plan_run(const Scenario& scenario, const RunOptions& options);

}  // namespace lowband::train
