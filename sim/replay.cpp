#include "sim/replay.h"

#include <fcntl.h>
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

[[noreturn]] void run_child(int fd, const NetworkSpec& network, const std::vector<const StepGraph*>& graphs) {
  Writer w;
  try {
    const std::vector<detail::TaskTimes> times = detail::simulate(network, graphs);
    const uint8_t status = kOk;
    w.raw(&status, 1);
    for (const detail::TaskTimes& t : times) {
      w.doubles(t.start_seconds);
      w.doubles(t.finish_seconds);
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

// The whole-step figures from each task's start and finish.
ReplayResult summarize(const StepGraph& graph, std::vector<double> start, std::vector<double> finish,
                       bool keep_task_times) {
  const size_t ranks = static_cast<size_t>(graph.ranks());
  ReplayResult r;
  r.rank_finish_seconds.assign(ranks, 0);
  r.rank_compute_busy_seconds.assign(ranks, 0);
  std::vector<std::vector<std::pair<double, double>>> busy(ranks);
  const std::vector<StepGraph::Record>& tasks = graph.records();
  for (size_t i = 0; i < tasks.size(); ++i) {
    const StepGraph::Record& t = tasks[i];
    auto& f = r.rank_finish_seconds;
    f[static_cast<size_t>(t.rank)] = std::max(f[static_cast<size_t>(t.rank)], finish[i]);
    if (t.kind == TaskKind::transfer)
      f[static_cast<size_t>(t.peer)] = std::max(f[static_cast<size_t>(t.peer)], finish[i]);
    else if (finish[i] > start[i])
      busy[static_cast<size_t>(t.rank)].emplace_back(start[i], finish[i]);
  }
  double max_busy = 0;
  for (size_t k = 0; k < ranks; ++k) {
    auto& intervals = busy[k];
    std::sort(intervals.begin(), intervals.end());
    double total = 0, open = 0, close = -1;
    for (auto [s, e] : intervals) {
      if (s > close) {
        if (close > open) total += close - open;
        open = s;
        close = e;
      } else {
        close = std::max(close, e);
      }
    }
    if (close > open) total += close - open;
    r.rank_compute_busy_seconds[k] = total;
    max_busy = std::max(max_busy, total);
    r.step_seconds = std::max(r.step_seconds, r.rank_finish_seconds[k]);
  }
  r.rank_exposed_comm_seconds.resize(ranks);
  for (size_t k = 0; k < ranks; ++k)
    r.rank_exposed_comm_seconds[k] = r.rank_finish_seconds[k] - r.rank_compute_busy_seconds[k];
  r.exposed_comm_seconds = r.step_seconds - max_busy;
  if (keep_task_times) {
    r.task_start_seconds = std::move(start);
    r.task_finish_seconds = std::move(finish);
  }
  return r;
}

std::vector<ReplayResult> replay_pointers(const NetworkSpec& network, const std::vector<const StepGraph*>& graphs,
                                          const ReplayOptions& options) {
  validate_network(network);  // here, so that bad input fails without a child
  for (const StepGraph* g : graphs)
    if (g->ranks() > network.nodes)
      throw InputError("network.nodes", "the step graph has " + std::to_string(g->ranks()) +
                                            " ranks but the network has only " + std::to_string(network.nodes) +
                                            " nodes");
  // Flush before forking, or the child would inherit (and SimGrid might flush) a copy
  // of whatever the caller has buffered.
  std::fflush(nullptr);
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
    run_child(fds[1], network, graphs);
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
  std::vector<ReplayResult> results;
  for (const StepGraph* g : graphs) {
    std::vector<double> start = rd.doubles();
    std::vector<double> finish = rd.doubles();
    results.push_back(summarize(*g, std::move(start), std::move(finish), options.task_times));
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

}  // namespace lowband::sim
