#include "sim/replay.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/error.h"
#include "sim/platform.h"
#include "sim/replay_engine.h"

namespace lowband::sim {

namespace {

// What the child sends back through the pipe: a status byte, then either the task
// times of each graph or an error (place and message).
enum Status : uint8_t { kOk = 0, kInputError = 1, kOtherError = 2 };

class Writer {
 public:
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void str(const std::string& s) { u64(s.size()); raw(s.data(), s.size()); }
  void doubles(const std::vector<double>& v) { u64(v.size()); raw(v.data(), v.size() * sizeof(double)); }
  void raw(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  const std::string& bytes() const { return buf_; }

 private:
  std::string buf_;
};

class Reader {
 public:
  explicit Reader(const std::string& buf) : buf_(buf) {}
  uint64_t u64() { uint64_t v; raw(&v, sizeof v); return v; }
  std::string str() { std::string s(u64(), '\0'); raw(s.data(), s.size()); return s; }
  std::vector<double> doubles() { std::vector<double> v(u64()); raw(v.data(), v.size() * sizeof(double)); return v; }
  void raw(void* p, size_t n) {
    if (pos_ + n > buf_.size()) throw std::runtime_error("sim::replay: truncated reply from the SimGrid child");
    if (n == 0) return;  // an empty vector's data() may be null, which memcpy must not get
    std::memcpy(p, buf_.data() + pos_, n);
    pos_ += n;
  }

 private:
  const std::string& buf_;
  size_t pos_ = 0;
};

void write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone; nothing left to tell
    done += static_cast<size_t>(n);
  }
}

std::string read_all(int fd) {
  std::string out;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(chunk, static_cast<size_t>(n));
  }
  return out;
}

// GCC 12's AddressSanitizer takes no allocator lock across fork: a thread that is
// still exiting when the replay forks (the OpenMP pool of a rank thread just
// joined) can hold it, and the child then waits for it for ever (seen once in
// sanitize-check, in SimGrid's first allocation). glibc's malloc is fork-safe, so
// only a sanitized build waits, until the thread count has held still for 30 ms
// (at most 2 s).
void settle_threads_before_fork() {
#if defined(__SANITIZE_ADDRESS__)
  auto threads = [] {
    std::FILE* f = std::fopen("/proc/self/stat", "r");
    int n = -1;
    // Field 20 of /proc/self/stat is num_threads (after "(comm)", which may hold spaces).
    char line[4096];
    if (f && std::fgets(line, sizeof line, f))
      if (const char* close = std::strrchr(line, ')'))
        std::sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %d", &n);
    if (f) std::fclose(f);
    return n;
  };
  int last = threads(), still = 0;
  for (int i = 0; i < 200 && still < 3; ++i) {
    ::usleep(10000);
    const int now = threads();
    still = now == last ? still + 1 : 0;
    last = now;
  }
#endif
}

// The whole-step figures from the replay's per-rank record (and each task's
// times, passed through when asked).
ReplayResult summarize(detail::TaskTimes times) {
  const size_t ranks = times.rank_finish_seconds.size();
  ReplayResult r;
  r.rank_finish_seconds = std::move(times.rank_finish_seconds);
  r.rank_compute_busy_seconds.assign(ranks, 0);
  double max_busy = 0;
  for (size_t k = 0; k < ranks; ++k) {
    const double total = times.busy_seconds[k];
    r.rank_compute_busy_seconds[k] = total;
    max_busy = std::max(max_busy, total);
    r.step_seconds = std::max(r.step_seconds, r.rank_finish_seconds[k]);
  }
  r.rank_exposed_comm_seconds.resize(ranks);
  for (size_t k = 0; k < ranks; ++k)
    r.rank_exposed_comm_seconds[k] = r.rank_finish_seconds[k] - r.rank_compute_busy_seconds[k];
  r.exposed_comm_seconds = r.step_seconds - max_busy;
  if (times.gave_up_seconds >= 0) {
    r.gave_up = true;
    r.step_seconds = times.gave_up_seconds;
  }
  r.task_start_seconds = std::move(times.start_seconds);
  r.task_finish_seconds = std::move(times.finish_seconds);
  return r;
}

// The child replays and summarizes, and sends back only the figures (the task
// times too when asked): nothing of the graph's size crosses the pipe otherwise.
[[noreturn]] void run_child(int fd, const NetworkSpec& network, const std::vector<const StepGraph*>& graphs,
                            const ReplayOptions& options) {
  Writer w;
  try {
    std::vector<detail::TaskTimes> times = detail::simulate(network, graphs, options.task_times, options.start_seconds);
    const uint8_t status = kOk;
    w.raw(&status, 1);
    w.doubles({static_cast<double>(times.size())});  // fewer than the graphs when one gave up
    for (detail::TaskTimes& t : times) {
      const ReplayResult r = summarize(std::move(t));
      w.doubles(r.rank_finish_seconds);
      w.doubles({r.step_seconds, r.exposed_comm_seconds, r.gave_up ? 1.0 : 0.0});
      w.doubles(r.rank_compute_busy_seconds);
      w.doubles(r.rank_exposed_comm_seconds);
      w.doubles(r.task_start_seconds);
      w.doubles(r.task_finish_seconds);
    }
  } catch (const InputError& e) {
    const uint8_t status = kInputError;
    w.raw(&status, 1);
    w.str(e.place());
    w.str(e.what());
  } catch (const std::exception& e) {
    const uint8_t status = kOtherError;
    w.raw(&status, 1);
    w.str("");
    w.str(e.what());
  }
  write_all(fd, w.bytes());
  ::close(fd);
  _exit(0);  // no atexit handlers, no flushing of the parent's stdio buffers
}

std::vector<ReplayResult> replay_pointers(const NetworkSpec& network, const std::vector<const StepGraph*>& graphs,
                                          const ReplayOptions& options) {
  validate_network(network);  // here, so that bad input fails without a child
  for (const StepGraph* g : graphs)
    if (g->ranks() > network.nodes)
      throw InputError("network.nodes", "the step graph has " + std::to_string(g->ranks()) +
                                            " ranks but the network has only " + std::to_string(network.nodes) +
                                            " nodes");
  // Hand the heap's free pages back first (the dry run's logs, at 512 context
  // ranks 300 MB): the child would count them in its resident memory too. Only
  // before a large graph: for a small one it is not worth a walk of the heap.
  size_t tasks = 0;
  for (const StepGraph* g : graphs) tasks += g->size();
  if (tasks >= 1000000) ::malloc_trim(0);
  // Flush before forking, or the child would inherit (and SimGrid might flush) a copy
  // of whatever the caller has buffered.
  std::fflush(nullptr);
  settle_threads_before_fork();
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("sim::replay: pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("sim::replay: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    // SimGrid writes nothing useful to stdout; stderr stays for its fatal messages.
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
    run_child(fds[1], network, graphs, options);
  }
  ::close(fds[1]);
  const std::string reply = read_all(fds[0]);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (reply.empty()) {
    const std::string how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                                : "exited with status " + std::to_string(WEXITSTATUS(status));
    throw std::runtime_error("sim::replay: the SimGrid child process " + how +
                             " before replying (SimGrid's own message, if any, is above on stderr)");
  }
  Reader rd(reply);
  uint8_t code = 0;
  rd.raw(&code, 1);
  if (code != kOk) {
    const std::string place = rd.str();
    const std::string what = rd.str();
    if (code == kInputError) {
      // what() already carries the place; keep only the rest.
      const std::string prefix = place.empty() ? "" : place + ": ";
      throw InputError(place, what.compare(0, prefix.size(), prefix) == 0 ? what.substr(prefix.size()) : what);
    }
    throw std::runtime_error(what);
  }
  const std::vector<double> count = rd.doubles();
  if (count.size() != 1 || !(count[0] >= 0 && count[0] <= static_cast<double>(graphs.size())))
    throw std::runtime_error("sim::replay: damaged reply from the SimGrid child");
  std::vector<ReplayResult> results;
  for (size_t g = 0; g < static_cast<size_t>(count[0]); ++g) {
    ReplayResult r;
    r.rank_finish_seconds = rd.doubles();
    const std::vector<double> step = rd.doubles();
    if (step.size() != 3) throw std::runtime_error("sim::replay: damaged reply from the SimGrid child");
    r.step_seconds = step[0];
    r.exposed_comm_seconds = step[1];
    r.gave_up = step[2] != 0;
    r.rank_compute_busy_seconds = rd.doubles();
    r.rank_exposed_comm_seconds = rd.doubles();
    r.task_start_seconds = rd.doubles();
    r.task_finish_seconds = rd.doubles();
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace

ReplayResult replay(const NetworkSpec& network, const StepGraph& graph, const ReplayOptions& options) {
  return replay_pointers(network, {&graph}, options).front();
}

std::vector<ReplayResult> replay_batch(const NetworkSpec& network, const std::vector<StepGraph>& graphs,
                                       const ReplayOptions& options) {
  std::vector<const StepGraph*> pointers;
  for (const StepGraph& g : graphs) pointers.push_back(&g);
  return replay_pointers(network, pointers, options);
}

std::vector<ReplayResult> replay_batch(const NetworkSpec& network, const std::vector<const StepGraph*>& graphs,
                                       const ReplayOptions& options) {
  return replay_pointers(network, graphs, options);
}

}  // namespace lowband::sim
