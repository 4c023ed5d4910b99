#pragma once
// A run directory's rules: one writer at a time (DirLock), and when a directory
// may be started afresh (check_restartable).
//
// One writer per run or sweep directory. A process that writes into DIR first
// takes an exclusive flock(2) on DIR/.lock and keeps it until it ends; a second
// process meets InputError naming DIR (exit status 2) instead of writing every
// step twice. The kernel drops the lock when its holder dies, however it dies, so
// a killed run leaves no stale lock: the file may stay, the lock does not.
//
// A sweep's lock is inherited by its workers (inherit_by_children), so the sweep
// directory stays locked until the last process that writes into it has exited.
//
// The array tasks of a sweep on a cluster (`sweep --training N`) each train one
// group into run directories of its own: they share the sweep directory's lock
// (LockMode::shared), each taking its run directories' locks as any run does, and
// keep out only a process that would write the whole sweep (an exclusive holder).
#include <string>

namespace lowband::train {

constexpr const char* kLockFile = ".lock";

enum class LockMode { exclusive, shared };


class DirLock {
 public:
  // create: make `dir` (and parents) when missing; else InputError(place, "no
  // directory") when it is missing. Waits up to wait_seconds for a holder that is
  // exiting (a killed sweep's worker); then InputError(place) naming dir.
  DirLock(const std::string& dir, const std::string& place, bool create, bool inherit_by_children = false,
          double wait_seconds = 2.0, LockMode mode = LockMode::exclusive);
  // Unlocks. An exclusive lock removes the lock file, and the directory too when
  // this lock created it and nothing else was written into it (a run that failed
  // before its first step), with the parents it created for it; a shared one
  // leaves both (another holder may still hold the file).
  ~DirLock();
  DirLock(DirLock&& other) noexcept;
  DirLock& operator=(DirLock&&) = delete;
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  int fd_ = -1;
  std::string created_root_;  // the outermost directory this lock created ("" none)
  LockMode mode_ = LockMode::exclusive;
};

// Whether `dir` holds nothing but (maybe) the lock file.
bool empty_but_lock(const std::string& dir);

// Removes FILE.tmp.PID files (common/atomic_file.h) that killed writers left in
// `dir`. Only under the directory's lock: then no live writer owns one.
void remove_stale_temp_files(const std::string& dir);

// A fresh run may write into `dir` unless it holds a run that can be continued
// (checkpoint.bin: InputError(place) saying to use --resume) or one that ended
// (summary.json of a finished or diverged run). Leftovers of a run that stopped
// before its first checkpoint are replaced: nothing of it can be resumed.
void check_restartable(const std::string& dir, const std::string& place);

}  // namespace lowband::train
