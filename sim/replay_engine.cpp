#include "sim/replay_engine.h"

#include <simgrid/s4u/Activity.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u/Host.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "sim/deferred_latency.h"
#include "sim/platform.h"

namespace lowband::sim::detail {

namespace sg4 = simgrid::s4u;

namespace {

// Compute on one rank, timed by processor sharing: the k tasks running at once each
// progress at 1/k. Its events are SimGrid kernel timers, so they interleave with the
// network's on SimGrid's clock. (SimGrid 3.32 Execs would do the same, but every
// activity started outside an actor sits in one std::list that is searched
// linearly on completion: with a few hundred ranks that search dominated replay.)
class RankCpu {
 public:
  explicit RankCpu(std::function<void(TaskId)> done) : done_(std::move(done)) {}

  void add(TaskId id, double seconds) {
    advance();
    running_.push_back({id, seconds});
    reschedule();
  }

 private:
  struct Running {
    TaskId id;
    double remaining_seconds;  // of exclusive use of the rank
  };

  // Brings every running task's remaining work up to now.
  void advance() {
    const double now = sg4::Engine::get_clock();
    if (!running_.empty()) {
      const double progress = (now - last_update_) / static_cast<double>(running_.size());
      for (Running& r : running_) r.remaining_seconds -= progress;
    }
    last_update_ = now;
  }

  double least_remaining() const {
    double least = running_.front().remaining_seconds;
    for (const Running& r : running_) least = std::min(least, r.remaining_seconds);
    return least;
  }

  void reschedule() {
    if (timer_) timer_->remove();
    timer_ = nullptr;
    if (running_.empty()) return;
    const double at = last_update_ + std::max(least_remaining(), 0.0) * static_cast<double>(running_.size());
    timer_ = simgrid::kernel::timer::Timer::set(at, [this]() { on_timer(); });
  }

  void on_timer() {
    timer_ = nullptr;  // SimGrid frees it after this call
    advance();
    // Every task within rounding of the earliest finishes now, together.
    const double least = least_remaining();
    const double eps = 1e-12 * std::max(1.0, last_update_);
    std::vector<TaskId> finished;
    auto kept = std::remove_if(running_.begin(), running_.end(), [&](const Running& r) {
      if (r.remaining_seconds > least + eps && r.remaining_seconds > eps) return false;
      finished.push_back(r.id);
      return true;
    });
    running_.erase(kept, running_.end());
    reschedule();
    for (TaskId id : finished) done_(id);  // may add tasks here: they see the new state
  }

  std::function<void(TaskId)> done_;
  std::vector<Running> running_;
  double last_update_ = 0;
  simgrid::kernel::timer::Timer* timer_ = nullptr;
};

// Starts each task of one graph when its last dependency finishes. Only started,
// unfinished transfers hold a SimGrid activity (in a slot), so memory follows
// what is in flight, not the size of the graph.
class GraphRun {
 public:
  // latencies: non-null when each transfer waits its route latency here, not in
  // SimGrid (sim/deferred_latency.h).
  GraphRun(const StepGraph& graph, const std::vector<sg4::Host*>& hosts, RouteLatencies* latencies, TaskTimes& out)
      : graph_(graph), hosts_(hosts), latencies_(latencies), out_(out) {
    const size_t n = graph.size();
    out_.start_seconds.assign(n, -1);
    out_.finish_seconds.assign(n, -1);
    pending_.assign(n, 0);
    // Built once and never resized: each RankCpu's timers point at it.
    cpus_.assign(hosts.size(), RankCpu([this](TaskId id) {
      finished(id);
      drain();
    }));
    // Successor lists in compressed form: first_succ_[i]..first_succ_[i+1] index succ_.
    first_succ_.assign(n + 1, 0);
    for (size_t i = 0; i < n; ++i)
      for (TaskId dep : graph.deps(static_cast<TaskId>(i))) ++first_succ_[static_cast<size_t>(dep) + 1];
    for (size_t i = 0; i < n; ++i) first_succ_[i + 1] += first_succ_[i];
    succ_.resize(first_succ_[n]);
    std::vector<size_t> fill(first_succ_.begin(), first_succ_.end() - 1);
    for (size_t i = 0; i < n; ++i)
      for (TaskId dep : graph.deps(static_cast<TaskId>(i))) {
        succ_[fill[static_cast<size_t>(dep)]++] = static_cast<TaskId>(i);
        ++pending_[i];
      }
  }

  void start() {
    t0_ = sg4::Engine::get_clock();
    for (size_t i = 0; i < pending_.size(); ++i)
      if (pending_[i] == 0) ready_.push_back(static_cast<TaskId>(i));
    drain();
  }

  // A transfer's SimGrid activity completed; `slot` is the one launch() gave it.
  void on_completion(size_t slot) {
    // The activity is still in use by SimGrid until this callback returns: keep
    // a reference one more round instead of dropping it here.
    if (retired_.size() >= 256) retired_.clear();
    retired_.push_back(std::move(slots_[slot].comm));
    free_slots_.push_back(slot);
    finished(slots_[slot].task);
    drain();
  }

  size_t finished_count() const { return finished_; }
  void release() { retired_.clear(); }

 private:
  void finished(TaskId id) {
    out_.finish_seconds[static_cast<size_t>(id)] = sg4::Engine::get_clock() - t0_;
    ++finished_;
    for (size_t k = first_succ_[static_cast<size_t>(id)]; k < first_succ_[static_cast<size_t>(id) + 1]; ++k)
      if (--pending_[static_cast<size_t>(succ_[k])] == 0) ready_.push_back(succ_[k]);
  }

  // Starts every ready task; free tasks (zero-second compute, self transfer) finish
  // at once and may make more tasks ready, hence the loop instead of recursion.
  void drain() {
    while (!ready_.empty()) {
      const TaskId id = ready_.back();
      ready_.pop_back();
      launch(id);
    }
  }

  void launch(TaskId id) {
    const StepGraph::Record& task = graph_.records()[static_cast<size_t>(id)];
    out_.start_seconds[static_cast<size_t>(id)] = sg4::Engine::get_clock() - t0_;
    if (task.kind == TaskKind::compute) {
      if (task.amount == 0) return finished(id);
      cpus_[static_cast<size_t>(task.rank)].add(id, task.amount);
    } else {
      if (task.rank == task.peer) return finished(id);
      const double latency = latencies_ ? latencies_->seconds(task.rank, task.peer) : 0;
      if (latency > 0)
        simgrid::kernel::timer::Timer::set(sg4::Engine::get_clock() + latency, [this, id]() { send(id); });
      else
        send(id);
    }
  }

  // Starts the transfer's SimGrid Comm.
  void send(TaskId id) {
    const StepGraph::Record& task = graph_.records()[static_cast<size_t>(id)];
    sg4::CommPtr comm =
        sg4::Comm::sendto_init(hosts_[static_cast<size_t>(task.rank)], hosts_[static_cast<size_t>(task.peer)]);
    comm->set_payload_size(static_cast<uint64_t>(std::llround(task.amount)));
    const size_t slot = take_slot();
    comm->set_data(reinterpret_cast<void*>(static_cast<intptr_t>(slot)));
    comm->start();
    slots_[slot] = {std::move(comm), id};
  }

  // In-flight transfers live in a few reused slots, not in a per-task array: what
  // a completion touches stays in cache however large the graph.
  size_t take_slot() {
    if (free_slots_.empty()) {
      slots_.emplace_back();
      return slots_.size() - 1;
    }
    const size_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }

  struct Slot {
    sg4::ActivityPtr comm;
    TaskId task = -1;
  };

  const StepGraph& graph_;
  const std::vector<sg4::Host*>& hosts_;
  RouteLatencies* latencies_;
  TaskTimes& out_;
  double t0_ = 0;
  std::vector<int32_t> pending_;
  std::vector<size_t> first_succ_;
  std::vector<TaskId> succ_;
  std::vector<TaskId> ready_;
  std::vector<Slot> slots_;
  std::vector<size_t> free_slots_;
  std::vector<sg4::ActivityPtr> retired_;
  std::vector<RankCpu> cpus_;
  size_t finished_ = 0;
};

}  // namespace

std::vector<TaskTimes> simulate(const NetworkSpec& network, const std::vector<const StepGraph*>& graphs) {
  // Quiet before the engine exists, so that even configuration changes stay silent.
  xbt_log_control_set("root.thres:critical");
  static char name[] = "lowband-replay";
  static char* argv[] = {name, nullptr};
  int argc = 1;
  // Never destroyed: this process exits right after the simulation, and tearing
  // down a large platform costs more than the replay itself.
  auto* engine = new sg4::Engine(&argc, argv);
  const std::vector<sg4::Host*> hosts = build_platform(network);
  std::unique_ptr<RouteLatencies> latencies;
  if (can_defer_latency(network)) {
    install_deferred_latency();
    latencies = std::make_unique<RouteLatencies>(hosts);
  }

  std::vector<TaskTimes> times(graphs.size());
  GraphRun* current = nullptr;
  sg4::Activity::on_completion_cb([&current](const sg4::Activity& activity) {
    if (current)
      current->on_completion(static_cast<size_t>(reinterpret_cast<intptr_t>(activity.get_data<void>())));
  });
  for (size_t g = 0; g < graphs.size(); ++g) {
    reset_tcp_connections();  // each graph starts on an idle network
    GraphRun run(*graphs[g], hosts, latencies.get(), times[g]);
    current = &run;
    run.start();
    engine->run();
    run.release();
    current = nullptr;
    if (run.finished_count() != graphs[g]->size())
      throw std::runtime_error("sim::replay: " +
                               std::to_string(graphs[g]->size() - run.finished_count()) +
                               " tasks never finished");
  }
  return times;
}

}  // namespace lowband::sim::detail
