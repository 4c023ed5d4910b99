#pragma once
// One sweep training in its own process: `lowband sweep-worker GROUP_FILE` (a
// hidden subcommand) reads the group file the sweep wrote, trains the group's
// first point and times it on every other point's network
// (train::RunOptions::also_timed_on), and writes GROUP_FILE's result file.
//
// Why a fresh process rather than fork(): GNU OpenMP (and oneDNN on it) is not
// fork-safe once a parallel region has run, and each training must start with
// its own thread count (jobs x threads <= cores); a new program image gives both.
#include <string>
#include <vector>

#include "runtime/scenario/grid.h"

namespace lowband::sweep {

struct GroupResult {
  bool ok = false;
  std::string message;  // why it failed ("" when ok)
};

// The group file: {"threads": T, "threads_forced": F, "resume": R, "points": [{"scenario":
// resolved, "source": S, "out_dir": D}, ...]}; the first point trains with T OpenMP
// threads, from its checkpoint when R (falling back to step 0 when the checkpoint
// does not fit). A resumed training keeps the thread count its checkpoint records
// unless F (the user gave --threads T): train::RunOptions::threads. Written atomically.
void write_group_file(const std::string& path, const std::vector<const grid::SweepPoint*>& points,
                      const std::vector<std::string>& out_dirs, int threads, bool threads_forced, bool resume);

// Makes this process die (SIGKILL) when the sweep process `parent` dies, so no
// worker goes on writing into a sweep that a new `sweep --resume` takes over;
// exits at once when `parent` is already gone.
void die_with_parent(int parent);

// Where the worker writes its GroupResult: GROUP_FILE with ".result.json" for ".json".
std::string result_path(const std::string& group_file);
// The result the worker wrote; {false, why} when there is none.
GroupResult read_group_result(const std::string& group_file);

// The worker's body: trains with the group's OpenMP thread count (or, resuming, the
// checkpoint's), writes the result file.
// Returns the process exit status: 0 trained, 3 diverged or failed.
int run_group_worker(const std::string& group_file);

}  // namespace lowband::sweep
