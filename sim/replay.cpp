#include "sim/replay.h"

#include <malloc.h>

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
#include "sim/replay_process.h"
#include "sim/replay_wire.h"

namespace lowband::sim {

namespace {

// What the replay process sends back through the pipe: a status byte, then either the task
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
    if (pos_ + n > buf_.size()) throw std::runtime_error("sim::replay: truncated reply from the replay process");
    if (n == 0) return;  // an empty vector's data() may be null, which memcpy must not get
    std::memcpy(p, buf_.data() + pos_, n);
    pos_ += n;
  }

 private:
  const std::string& buf_;
  size_t pos_ = 0;
};


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
  r.step_end_seconds = std::move(times.step_end_seconds);
  return r;
}

}  // namespace

std::string detail::error_reply(const std::string& message) {
  Writer w;
  const uint8_t status = kOtherError;
  w.raw(&status, 1);
  w.str("");
  w.str(message);
  return w.bytes();
}

// The replay process's answer: it replays and summarizes, and sends back only the
// figures (the task times too when asked): nothing of the graph's size otherwise.
std::string detail::reply_to(std::istream& request) {
  Writer w;
  try {
    const wire::Request r = wire::read_request(request);
    std::vector<const StepGraph*> graphs;
    for (const StepGraph& g : r.graphs) graphs.push_back(&g);
    std::vector<detail::TaskTimes> times = detail::simulate(r.network, graphs, r.options.task_times, r.options.start_seconds);
    const uint8_t status = kOk;
    w.raw(&status, 1);
    w.doubles({static_cast<double>(times.size())});  // fewer than the graphs when one gave up
    for (detail::TaskTimes& t : times) {
      const ReplayResult res = summarize(std::move(t));
      w.doubles(res.rank_finish_seconds);
      w.doubles({res.step_seconds, res.exposed_comm_seconds, res.gave_up ? 1.0 : 0.0});
      w.doubles(res.rank_compute_busy_seconds);
      w.doubles(res.rank_exposed_comm_seconds);
      w.doubles(res.task_start_seconds);
      w.doubles(res.task_finish_seconds);
      w.doubles(res.step_end_seconds);
    }
  } catch (const InputError& e) {
    const uint8_t status = kInputError;
    w.raw(&status, 1);
    w.str(e.place());
    w.str(e.what());
  } catch (const std::exception& e) {
    return error_reply(e.what());
  }
  return w.bytes();
}

namespace {

std::vector<ReplayResult> replay_pointers(const NetworkSpec& network, const std::vector<const StepGraph*>& graphs,
                                          const ReplayOptions& options) {
  validate_network(network);  // here, so that bad input fails without a replay process
  for (const StepGraph* g : graphs)
    if (g->ranks() > network.nodes)
      throw InputError("network.nodes", "the step graph has " + std::to_string(g->ranks()) +
                                            " ranks but the network has only " + std::to_string(network.nodes) +
                                            " nodes");
  // Hand the heap's free pages back first (the dry run's logs, at 512 context
  // ranks 300 MB): the machine holds the replay process's copy of the graph
  // beside them. Only before a large graph: for a small one it is not worth a
  // walk of the heap.
  size_t tasks = 0;
  for (const StepGraph* g : graphs) tasks += g->size();
  if (tasks >= 1000000) ::malloc_trim(0);
  const std::string reply = detail::ask_replay_process(network, graphs, options);
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
    throw std::runtime_error("sim::replay: damaged reply from the replay process");
  std::vector<ReplayResult> results;
  for (size_t g = 0; g < static_cast<size_t>(count[0]); ++g) {
    ReplayResult r;
    r.rank_finish_seconds = rd.doubles();
    const std::vector<double> step = rd.doubles();
    if (step.size() != 3) throw std::runtime_error("sim::replay: damaged reply from the replay process");
    r.step_seconds = step[0];
    r.exposed_comm_seconds = step[1];
    r.gave_up = step[2] != 0;
    r.rank_compute_busy_seconds = rd.doubles();
    r.rank_exposed_comm_seconds = rd.doubles();
    r.task_start_seconds = rd.doubles();
    r.task_finish_seconds = rd.doubles();
    r.step_end_seconds = rd.doubles();
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
