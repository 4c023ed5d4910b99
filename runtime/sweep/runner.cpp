#include "runtime/sweep/runner.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <ostream>
#include <stdexcept>
#include <thread>

#include "common/atomic_file.h"
#include "common/error.h"
#include "runtime/sweep/worker.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/run.h"
#include "runtime/train/run_dir.h"

extern char** environ;

namespace lowband::sweep {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

int omp_num_threads_env() {
  const char* text = std::getenv("OMP_NUM_THREADS");
  const int n = text ? std::atoi(text) : 0;  // "4" or "4,2" (nested levels): the first level
  return std::max(n, 0);
}

// Compute seconds measured on this CPU (not from a device profile) change when
// trainings share the CPU.
bool measured_timing(const Scenario& s) { return train::compute_timing(s) == parallel::ComputeTiming::measured; }

pid_t spawn_worker(const std::string& exe, const std::string& group_file, const std::string& log_file) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // The worker's progress lines go to its log, so parallel trainings do not interleave here.
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<std::string> args = {exe, "sweep-worker", group_file, "--parent-pid", std::to_string(::getpid())};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start the sweep worker " + exe + ": " + std::strerror(rc));
  return pid;
}

std::string exit_description(int status) {
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

struct Running {
  size_t group = 0;
  pid_t pid = 0;
  std::string group_file, log_file;
  Clock::time_point started;
};

}  // namespace

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

Parallelism choose_parallelism(int requested_jobs, int requested_threads, int trainings, int cores) {
  cores = std::max(cores, 1);
  Parallelism p;
  if (requested_jobs > 0) p.jobs = requested_jobs;
  else if (requested_threads > 0) p.jobs = std::max(1, cores / requested_threads);
  else p.jobs = cores;
  p.jobs = std::max(1, std::min(p.jobs, std::max(trainings, 1)));
  p.threads = requested_threads > 0 ? requested_threads : std::max(1, cores / p.jobs);
  return p;
}

namespace {

// One sweep's trainings, `jobs` at a time, each in a worker process; the index is
// rewritten after each.
class SweepRun {
 public:
  SweepRun(const grid::SweepPlan& plan, const SweepOptions& options) : plan_(plan), options_(options), dir_(options.out_dir) {}
  ~SweepRun() {
    if (training_lock_ >= 0) ::close(training_lock_);
  }
  SweepRun(const SweepRun&) = delete;
  SweepRun& operator=(const SweepRun&) = delete;
  SweepResult run();

 private:
  void mark_todo();  // the groups with points still to run; the others' points count as skipped
  void write_index() const;
  bool one_training() const { return options_.only_training > 0; }
  bool ours(size_t g) const { return !one_training() || g + 1 == size_t(options_.only_training); }
  bool take_training(size_t g);  // one training: whether no other process trains it
  void log_start() const;
  std::string group_file(size_t g) const { return (dir_ / "groups" / ("g" + std::to_string(g + 1) + ".json")).string(); }
  Running start(size_t g);
  void finish(const Running& r, int status);
  void start_or_fail(size_t g, std::vector<Running>& running);
  bool reap_one(std::vector<Running>& running);  // whether one had ended

  const grid::SweepPlan& plan_;
  const SweepOptions& options_;
  const fs::path dir_;
  SweepResult result_;
  std::vector<size_t> todo_;
  Parallelism par_;
  bool threads_forced_ = false;
  int training_lock_ = -1;  // one training: groups/gN.lock, held while this runs
};

// The whole sweep writes the index from what it knows; one training of it merges
// its points into what the others wrote, one writer at a time.
void SweepRun::write_index() const {
  const std::string index = (dir_ / "index.json").string();
  if (!one_training()) return write_file_atomically(index, index_json(plan_, result_.states).dump(2) + "\n");
  const std::string lock_path = (dir_ / ".index.lock").string();
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(lock_path, std::string("cannot open: ") + std::strerror(errno));
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  std::vector<PointState> states = previous_states(plan_, dir_.string(), /*keep_failed=*/true);
  for (size_t i : plan_.groups[size_t(options_.only_training - 1)]) states[i] = result_.states[i];
  try {
    write_file_atomically(index, index_json(plan_, states).dump(2) + "\n");
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

// A training's group files (groups/gN.*) and run directories have one writer: the
// array task that holds groups/gN.lock until it exits (a training submitted twice
// is trained once; the other task leaves it).
bool SweepRun::take_training(size_t g) {
  const std::string path = (dir_ / "groups" / ("g" + std::to_string(g + 1) + ".lock")).string();
  training_lock_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (training_lock_ < 0) throw InputError(path, std::string("cannot open: ") + std::strerror(errno));
  return ::flock(training_lock_, LOCK_EX | LOCK_NB) == 0;  // held until this SweepRun ends
}

void SweepRun::mark_todo() {
  for (size_t g = 0; g < plan_.groups.size(); ++g) {
    if (!ours(g)) continue;
    std::string trainer;
    for (size_t i : plan_.groups[g]) {
      if (result_.states[i].status == PointStatus::done) {
        ++result_.skipped;
        continue;
      }
      if (trainer.empty()) trainer = plan_.points[i].name;
      result_.states[i] = {PointStatus::pending, trainer, ""};
    }
    if (!trainer.empty()) todo_.push_back(g);
  }
}

void SweepRun::log_start() const {
  std::ostream* log = options_.log;
  if (!log) return;
  *log << "sweep " << dir_.string() << ": " << plan_.points.size() << " points, " << plan_.groups.size()
       << " trainings";
  if (result_.skipped) *log << " (" << result_.skipped << " points already done)";
  *log << "; " << par_.jobs << " at a time, " << par_.threads << " OpenMP thread(s) each\n";
  bool measured = false;
  for (size_t g : todo_) measured = measured || measured_timing(plan_.points[plan_.groups[g].front()].scenario);
  if (measured && par_.jobs > 1)
    *log << "note: compute seconds are measured on this CPU (devices.timing) while " << par_.jobs
         << " trainings share it; set devices.timing=profile for simulated times independent of --jobs\n";
  *log << std::flush;
}

Running SweepRun::start(size_t g) {
  Running r{g, 0, group_file(g), (dir_ / "groups" / ("g" + std::to_string(g + 1) + ".log")).string(), Clock::now()};
  std::vector<const grid::SweepPoint*> points;
  std::vector<std::string> out_dirs;
  for (size_t i : plan_.groups[g]) {
    if (result_.states[i].status == PointStatus::done) continue;
    points.push_back(&plan_.points[i]);
    out_dirs.push_back((dir_ / plan_.points[i].name).string());
  }
  // An unfinished training with a checkpoint continues from it (the worker checks
  // that it fits); any other leftover directory is stale: start it afresh.
  const bool resume = fs::exists(fs::path(out_dirs.front()) / "checkpoint.bin");
  if (!resume)
    for (const std::string& d : out_dirs) fs::remove_all(d);
  fs::remove(result_path(r.group_file));
  // A resumed training's thread count is its checkpoint's (the worker decides the
  // same way and says so in its log). Read before the worker starts and writes new
  // checkpoints; one that cannot be read here is the worker's to report.
  std::string threads_note;
  std::ostream* log = options_.log;
  if (resume && log) try {
      const train::Checkpoint c = train::read_checkpoint(train::checkpoint_path(out_dirs.front()));
      const train::ResumeThreads t = train::resume_threads(c.omp_threads, par_.threads, threads_forced_);
      if (!c.complete && !t.message.empty()) threads_note = (t.warning ? "warning: " : "") + t.message;
    } catch (const std::exception&) {
    }
  write_group_file(r.group_file, points, out_dirs, par_.threads, threads_forced_, resume);
  r.pid = spawn_worker(options_.worker_exe, r.group_file, r.log_file);
  if (log) {
    *log << "group " << g + 1 << "/" << plan_.groups.size() << " started: " << points.front()->name;
    if (points.size() > 1) *log << " (also timed on " << points.size() - 1 << " more network(s))";
    *log << "\n";
    if (!threads_note.empty()) *log << "group " << g + 1 << ": " << threads_note << "\n";
    *log << std::flush;
  }
  return r;
}

void SweepRun::finish(const Running& r, int status) {
  GroupResult g = read_group_result(r.group_file);
  if (!g.ok && g.message == "the worker wrote no result")
    g.message = "the sweep worker " + exit_description(status) + " (log: " + r.log_file + ")";
  for (size_t i : plan_.groups[r.group]) {
    if (result_.states[i].status == PointStatus::done) continue;
    result_.states[i].status = g.ok ? PointStatus::done : PointStatus::failed;
    result_.states[i].message = g.ok ? "" : g.message;
    if (!g.ok) ++result_.failed;
  }
  ++result_.trainings;
  write_index();
  if (options_.log) {
    const double seconds = std::chrono::duration<double>(Clock::now() - r.started).count();
    *options_.log << "group " << r.group + 1 << "/" << plan_.groups.size() << (g.ok ? " done" : " FAILED") << " in "
                  << std::fixed << std::setprecision(1) << seconds << std::defaultfloat << " s"
                  << (g.ok ? "" : ": " + g.message) << "\n" << std::flush;
  }
}

void SweepRun::start_or_fail(size_t g, std::vector<Running>& running) {
  try {
    running.push_back(start(g));
  } catch (const std::exception& e) {  // could not start: the group fails, the others go on
    const Running r{g, 0, group_file(g), "", Clock::now()};
    write_file_atomically(result_path(r.group_file), nlohmann::json{{"ok", false}, {"message", e.what()}}.dump());
    finish(r, 0);
  }
}

bool SweepRun::reap_one(std::vector<Running>& running) {
  // Poll our own children only (waitpid(-1) could reap a caller's).
  for (size_t k = 0; k < running.size(); ++k) {
    int status = 0;
    const pid_t done = ::waitpid(running[k].pid, &status, WNOHANG);
    if (done == running[k].pid || (done < 0 && errno != EINTR)) {
      finish(running[k], status);
      running.erase(running.begin() + long(k));
      return true;
    }
  }
  return false;
}

SweepResult SweepRun::run() {
  std::error_code ec;
  fs::create_directories(dir_ / "groups", ec);
  if (ec) throw InputError("--out", "cannot create the sweep directory " + dir_.string() + ": " + ec.message());
  // One sweep per directory. The workers inherit the lock: the directory stays locked
  // until the last process writing into it has exited, even after a SIGKILL here.
  // One training of it shares the directory with the others (runner.h).
  const train::DirLock lock(dir_.string(), "--out", /*create=*/true, /*inherit_by_children=*/true, 2.0,
                            one_training() ? train::LockMode::shared : train::LockMode::exclusive);
  if (!one_training()) train::remove_stale_temp_files(dir_.string());  // else another's may be in flight

  result_.states = previous_states(plan_, dir_.string(), one_training());
  if (one_training()) {
    if (!take_training(size_t(options_.only_training - 1))) {
      if (options_.log)
        *options_.log << "training " << options_.only_training << " is being trained by another process: nothing to do\n";
      return result_;
    }
    // Again, under the training's lock: what a task that held it before wrote.
    result_.states = previous_states(plan_, dir_.string(), true);
  }
  mark_todo();
  if (one_training() && todo_.empty() && options_.log)
    *options_.log << "training " << options_.only_training << " is done: nothing to do\n";
  if (!one_training()) write_file_atomically((dir_ / "sweep.json").string(), grid::sweep_document(plan_.spec).dump(2) + "\n");
  write_index();
  for (size_t g : todo_) result_.todo.push_back(int(g) + 1);
  if (options_.prepare_only) return result_;
  const int threads_wanted = options_.threads > 0 ? options_.threads : omp_num_threads_env();
  // --threads given: a resumed training takes it even where its checkpoint records
  // another count (with a warning); else it keeps the recorded count.
  threads_forced_ = options_.threads > 0;
  par_ = choose_parallelism(options_.jobs, threads_wanted, int(todo_.size()), available_cores());
  log_start();

  std::vector<Running> running;
  size_t next = 0;
  while (next < todo_.size() || !running.empty()) {
    while (next < todo_.size() && int(running.size()) < par_.jobs) start_or_fail(todo_[next++], running);
    if (!reap_one(running)) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return result_;
}

}  // namespace

SweepResult run_sweep(const grid::SweepPlan& plan, const SweepOptions& options) { return SweepRun(plan, options).run(); }

}  // namespace lowband::sweep
