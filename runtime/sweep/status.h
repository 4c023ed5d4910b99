#pragma once
// `lowband sweep --status DIR`: where a sweep stands, read from its directory alone
// (index.json, each training's run directory and its lock), so that it answers from
// any shell on any machine that sees the directory, while the sweep runs or after
// it stopped. A point is
//   done / failed       as index.json says (a failed one with its message's last
//                       line and its worker's log, DIR/groups/gN.log);
//   running             its training's run directory is locked by a writer (the
//                       lock every run holds, run_dir.h): step k of N from its
//                       summary.json when the training has written one;
//   stopped             not running, with steps done: `sweep --resume DIR`
//                       continues it from its last checkpoint;
//   waiting             nothing yet.
// A point timed on another's training (another network) follows that training.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lowband::sweep {

struct PointProgress {
  std::string run_dir;   // relative to the sweep directory
  std::string trained_in;
  std::string state;     // "done", "failed", "running", "stopped", "waiting"
  std::optional<int64_t> steps_done, steps_planned;
  std::string message;   // failed: the last line of why
  std::string log;       // failed: the worker's log, where it exists
};

struct SweepStatus {
  std::string dir, name;
  int trainings = 0;
  bool sweep_running = false;  // a `lowband sweep` (or one of its array tasks) holds the directory
  std::vector<PointProgress> points;
  // --launcher slurm: the job arrays submitted (DIR/slurm/jobs: "ID TRAININGS"),
  // and the state Slurm's squeue gives each array task still queued or running
  // ("4242_3" -> "RUNNING"), where squeue answers.
  std::vector<std::pair<std::string, std::string>> slurm_jobs;
  std::vector<std::pair<std::string, std::string>> slurm_tasks;
  int count(const std::string& state) const;
};

// InputError naming --status when DIR is not a sweep directory (no readable index.json).
SweepStatus read_sweep_status(const std::string& dir);
std::string format_sweep_status(const SweepStatus& status);

}  // namespace lowband::sweep
