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
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "common/error.h"
#include "sim/deferred_latency.h"
#include "sim/platform.h"
#include "sim/replay_dynamics.h"

namespace lowband::sim::detail {

namespace sg4 = simgrid::s4u;

namespace {

class GraphRun;

// Compute on one rank, timed by processor sharing: the k tasks running at once each
// progress at 1/k. Its events are SimGrid kernel timers, so they interleave with the
// network's on SimGrid's clock. (SimGrid 3.32 Execs would do the same, but every
// activity started outside an actor sits in one std::list that is searched
// linearly on completion: with a few hundred ranks that search dominated replay.)
class RankCpu {
 public:
  RankCpu(GraphRun* run, int rank) : run_(run), rank_(rank) {}

  void add(TaskId id, double seconds) {
    advance();
    if (running_.empty()) busy_since_ = last_update_;
    running_.push_back({id, seconds});
    reschedule();
  }

  // network.dynamics: the node's compute speed factor (0: down).
  void set_speed(double factor) {
    if (factor == speed_) return;
    advance();
    speed_ = factor;
    reschedule();
  }
  // Whether a task of this rank is held by its node being down.
  bool stalled() const { return speed_ == 0 && !running_.empty(); }
  // The step gave up: nothing of it runs on.
  void halt() {
    if (timer_) timer_->remove();
    timer_ = nullptr;
    running_.clear();
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
      const double progress = (now - last_update_) / static_cast<double>(running_.size()) * speed_;
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
    if (running_.empty() || speed_ == 0) return;
    const double at =
        last_update_ + std::max(least_remaining(), 0.0) * static_cast<double>(running_.size()) / speed_;
    timer_ = simgrid::kernel::timer::Timer::set(at, [this]() { on_timer(); });
  }

  void on_timer();

  GraphRun* run_;
  int rank_;
  std::vector<Running> running_;
  std::vector<TaskId> finished_;  // reused by on_timer
  double last_update_ = 0;
  double busy_since_ = 0;  // SimGrid's clock when running_ last became non-empty
  double speed_ = 1;       // exactly 1 on a constant network: times unchanged bit for bit
  simgrid::kernel::timer::Timer* timer_ = nullptr;
};

// Starts each task of one graph when its last dependency finishes. Only started,
// unfinished transfers hold a SimGrid activity (in a slot), so memory follows
// what is in flight, not the size of the graph.
class GraphRun {
 public:
  // latencies: non-null when each transfer waits its route latency here, not in
  // SimGrid (sim/deferred_latency.h).
  // dynamics: null on a constant network.
  // stall_timeout_seconds: network.restart's (with dynamics), else 0: never give up.
  GraphRun(const StepGraph& graph, const std::vector<sg4::Host*>& hosts, RouteLatencies* latencies,
           ReplayDynamics* dynamics, MessageOrder order, double stall_timeout_seconds, bool task_times, TaskTimes& out)
      : graph_(graph), hosts_(hosts), latencies_(latencies), dynamics_(dynamics),
        fifo_(order != MessageOrder::concurrent), per_connection_(order == MessageOrder::connection),
        stall_timeout_seconds_(stall_timeout_seconds), task_times_(task_times), out_(out) {
    const size_t n = graph.size();
    if (task_times_) {
      out_.start_seconds.assign(n, -1);
      out_.finish_seconds.assign(n, -1);
    }
    out_.rank_finish_seconds.assign(static_cast<size_t>(graph.ranks()), 0);
    step_ends_ = graph.step_ends();
    out_.step_end_seconds.assign(step_ends_.size(), -1);
    busy_.assign(static_cast<size_t>(graph.ranks()), Busy{});
    pending_.assign(n, 0);
    // Built once and never resized: each RankCpu's timers point at it.
    cpus_.reserve(hosts.size());
    for (size_t r = 0; r < hosts.size(); ++r) cpus_.emplace_back(this, static_cast<int>(r));
    // Successor lists in compressed form: first_succ_[i]..first_succ_[i+1] index succ_.
    size_t edges = 0;
    for (size_t i = 0; i < n; ++i) edges += graph.deps(static_cast<TaskId>(i)).size();
    if (edges > std::numeric_limits<uint32_t>::max())
      throw std::runtime_error("sim::replay: more than 2^32 dependencies in one step graph");
    first_succ_.assign(n + 1, 0);
    for (size_t i = 0; i < n; ++i)
      for (TaskId dep : graph.deps(static_cast<TaskId>(i))) ++first_succ_[static_cast<size_t>(dep) + 1];
    for (size_t i = 0; i < n; ++i) first_succ_[i + 1] += first_succ_[i];
    succ_.resize(first_succ_[n]);
    std::vector<uint32_t> fill(first_succ_.begin(), first_succ_.end() - 1);
    for (size_t i = 0; i < n; ++i)
      for (TaskId dep : graph.deps(static_cast<TaskId>(i))) {
        succ_[fill[static_cast<size_t>(dep)]++] = static_cast<TaskId>(i);
        ++pending_[i];
      }
  }

  void start() {
    t0_ = sg4::Engine::get_clock();
    if (dynamics_ && !pending_.empty()) dynamics_->start([this]() { on_dynamics(); });
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
    const Slot done = slots_[slot];
    slots_[slot].task = -1;  // free
    transfer_done(done.task, done.src, done.dst);
    drain();
  }

  size_t finished_count() const { return finished_; }
  bool gave_up() const { return out_.gave_up_seconds >= 0; }
  int ranks() const { return static_cast<int>(busy_.size()); }
  void release() { retired_.clear(); }
  // A graph that cannot finish: its transfers are left to the process's exit
  // (SimGrid complains, with a backtrace, when an unfinished Comm is destroyed).
  void abandon() {
    for (Slot& slot : slots_)
      if (slot.comm) slot.comm.detach();
  }

  // `rank` computed from SimGrid time `since` until now, and not now: its busy
  // time, the union of its compute tasks' intervals, as the sorted intervals
  // would be merged (a period that starts when the last ended continues it).
  void busy_period(int rank, double since) {
    const double s = since - t0_, e = sg4::Engine::get_clock() - t0_;
    Busy& b = busy_[static_cast<size_t>(rank)];
    if (s > b.close) {
      if (b.close > b.open) b.total += b.close - b.open;
      b.open = s;
      b.close = e;
    } else {
      b.close = std::max(b.close, e);
    }
  }
  // Once the graph is done: each rank's busy seconds.
  void finish_busy() {
    out_.busy_seconds.resize(busy_.size());
    for (size_t k = 0; k < busy_.size(); ++k) {
      Busy& b = busy_[k];
      if (b.close > b.open) b.total += b.close - b.open;
      out_.busy_seconds[k] = b.total;
    }
  }
  void compute_finished(TaskId id, int rank) {
    finished(id, rank, -1);
    drain();
  }

 private:
  // Task `id` of `rank` (a transfer's source; `peer`, its destination, or -1 for
  // a compute task) finished now. The caller knows both: the graph's record is
  // not read again here (a cache miss per task on a graph of 10 million).
  void finished(TaskId id, int rank, int peer) {
    const double now = sg4::Engine::get_clock() - t0_;
    if (task_times_) out_.finish_seconds[static_cast<size_t>(id)] = now;
    double& f = out_.rank_finish_seconds[static_cast<size_t>(rank)];
    f = std::max(f, now);
    if (peer >= 0) {
      double& g = out_.rank_finish_seconds[static_cast<size_t>(peer)];
      g = std::max(g, now);
    }
    if (!step_ends_.empty()) {  // a graph of several steps: when each ended
      const auto it = std::lower_bound(step_ends_.begin(), step_ends_.end(), id);
      if (it != step_ends_.end() && *it == id) out_.step_end_seconds[size_t(it - step_ends_.begin())] = now;
    }
    if (++finished_ == pending_.size() && dynamics_) dynamics_->stop();  // let engine->run() return
    if (finished_ == pending_.size() && stall_timer_) {
      stall_timer_->remove();
      stall_timer_ = nullptr;
    }
    for (uint32_t k = first_succ_[static_cast<size_t>(id)]; k < first_succ_[static_cast<size_t>(id) + 1]; ++k)
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
    if (task_times_) out_.start_seconds[static_cast<size_t>(id)] = sg4::Engine::get_clock() - t0_;
    if (task.kind == TaskKind::compute) {
      if (task.amount == 0) return finished(id, task.rank, -1);
      cpus_[static_cast<size_t>(task.rank)].add(id, task.amount);
      if (stall_timeout_seconds_ > 0 && dynamics_->node_down(task.rank)) update_stall();
    } else {
      if (task.rank == task.peer) return finished(id, task.rank, task.peer);
      const double latency = !latencies_                                       ? 0
                             : dynamics_ && dynamics_->changes_latency() ? dynamics_->route_latency_seconds(task.rank, task.peer)
                                                                         : latencies_->seconds(task.rank, task.peer);
      if (latency > 0)
        simgrid::kernel::timer::Timer::set(sg4::Engine::get_clock() + latency, [this, id]() {
          if (gave_up()) return;
          send(id, sg4::Engine::get_clock());
          drain();  // a message of no bytes finished at once
        });
      else
        send(id, sg4::Engine::get_clock());
    }
  }

  // Starts the transfer's SimGrid Comm. With the latency paid here (latencies_), a
  // message of no bytes is done now: SimGrid would finish it at this date too
  // (its latency phase, scaled by 2^-900, is below the clock's resolution).
  // ready_s: SimGrid's clock when it became ready to move bytes (earlier than now
  // when it waited for the message before it on its stream).
  void send(TaskId id, double ready_s) {
    const StepGraph::Record& task = graph_.records()[static_cast<size_t>(id)];
    const uint64_t bytes = static_cast<uint64_t>(std::llround(task.amount));
    if (bytes == 0 && latencies_) return finished(id, task.rank, task.peer);
    // network.message_order fifo: one stream per (source, destination, kind); a
    // message waits for the one before it there, as on one connection (under
    // `ideal` its latency was paid meanwhile).
    if (fifo_) {
      Stream& stream = streams_[stream_key(task)];
      if (stream.busy) {
        stream.waiting.push_back({id, ready_s});
        return;
      }
      stream.busy = true;
    }
    const size_t slot = take_slot();
    slots_[slot] = {nullptr, id, task.rank, task.peer, false, bytes};
    if (dynamics_ && dynamics_->transfer_stopped(task.rank, task.peer)) {
      slots_[slot].stopped = true;  // its bytes wait until the way is up (on_dynamics)
      update_stall();
    } else {
      start_comm(slot, bytes, ready_s);
    }
  }

  // queued_since_s: when a message that waited on its stream became ready (the tcp
  // model lets its latency overlap the message before; sim/platform.h); NaN otherwise.
  void start_comm(size_t slot, uint64_t bytes, double queued_since_s = std::numeric_limits<double>::quiet_NaN()) {
    Slot& s = slots_[slot];
    sg4::CommPtr comm = sg4::Comm::sendto_init(hosts_[static_cast<size_t>(s.src)], hosts_[static_cast<size_t>(s.dst)]);
    comm->set_payload_size(bytes);
    comm->set_data(reinterpret_cast<void*>(static_cast<intptr_t>(slot)));
    if (queued_since_s < sg4::Engine::get_clock()) set_tcp_queued_since(queued_since_s);
    comm->start();  // SimGrid's latency-factor callback runs in here
    set_tcp_queued_since(std::numeric_limits<double>::quiet_NaN());
    s.comm = std::move(comm);
  }

  // A trace changed: each rank's compute speed, and which transfers in flight
  // must stop or may go on (sim/dynamics.h). A transfer stops by cancelling its
  // Comm and goes on as a new Comm of the bytes it had left: SimGrid 3.32's
  // suspend/resume leaves a resumed CM02 flow a sharing penalty of 1 instead of
  // its route latency, so next to other flows it would get almost nothing.
  void on_dynamics() {
    for (size_t r = 0; r < cpus_.size(); ++r) cpus_[r].set_speed(dynamics_->node_speed(static_cast<int>(r)));
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& slot = slots_[i];
      if (slot.task < 0) continue;  // a free slot
      const bool stop = dynamics_->transfer_stopped(slot.src, slot.dst);
      if (stop == slot.stopped) continue;
      slot.stopped = stop;
      if (stop) {
        slot.remaining_bytes = static_cast<uint64_t>(std::llround(slot.comm->get_remaining()));
        retired_.push_back(std::move(slot.comm));
        retired_.back()->cancel();  // its completion callbacks see it cancelled, not finished
      } else if (slot.remaining_bytes == 0) {
        const Slot done = slot;
        slot.task = -1;
        free_slots_.push_back(i);
        transfer_done(done.task, done.src, done.dst);
      } else {
        start_comm(i, slot.remaining_bytes);
      }
    }
    update_stall();
    drain();
  }

  // network.restart: a step stalls while a transfer or compute task of it is held
  // by a node or link that is down; stalled without a break for the timeout, it
  // gives up (sim/dynamics.h). Called wherever something may start or stop being
  // held: a trace change, a transfer that starts stopped, a task on a down node.
  void update_stall() {
    if (stall_timeout_seconds_ <= 0 || gave_up()) return;
    bool stalled = std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.task >= 0 && s.stopped; });
    for (const RankCpu& cpu : cpus_) stalled = stalled || cpu.stalled();
    if (stalled && !stall_timer_) {
      stall_timer_ = simgrid::kernel::timer::Timer::set(sg4::Engine::get_clock() + stall_timeout_seconds_, [this]() {
        stall_timer_ = nullptr;  // SimGrid frees it after this call
        give_up();
      });
    } else if (!stalled && stall_timer_) {
      stall_timer_->remove();
      stall_timer_ = nullptr;
    }
  }

  // Stops everything of the step now; engine->run() returns once the latency
  // timers still set have fired (they send nothing now).
  void give_up() {
    out_.gave_up_seconds = sg4::Engine::get_clock() - t0_;
    dynamics_->stop();
    for (RankCpu& cpu : cpus_) cpu.halt();
    for (Slot& slot : slots_) {
      if (!slot.comm) continue;
      retired_.push_back(std::move(slot.comm));
      retired_.back()->cancel();
    }
    ready_.clear();
  }

  // fifo: (source, destination, kind); connection: (source, destination).
  uint64_t stream_key(const StepGraph::Record& task) const {
    return (static_cast<uint64_t>(static_cast<uint32_t>(task.rank)) << 40) |
           (static_cast<uint64_t>(static_cast<uint32_t>(task.peer)) << 16) | (per_connection_ ? 0u : task.tag);
  }

  // A transfer's bytes all arrived: the next message of its stream may go.
  void transfer_done(TaskId id, int src, int dst) {
    if (!fifo_) return finished(id, src, dst);
    Stream& stream = streams_[stream_key(graph_.records()[static_cast<size_t>(id)])];
    stream.busy = false;
    finished(id, src, dst);
    if (stream.waiting.empty()) return;
    const Queued next = stream.waiting.front();
    stream.waiting.pop_front();
    send(next.id, next.ready_s);
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
    sg4::ActivityPtr comm;  // null while stopped
    TaskId task = -1;       // -1: a free slot
    int src = 0, dst = 0;
    bool stopped = false;         // a link or node of its way is down
    uint64_t remaining_bytes = 0; // when it stopped
  };
  struct Busy {
    double open = 0, close = -1, total = 0;
  };
  struct Queued {
    TaskId id;
    double ready_s;  // SimGrid's clock when it became ready to move bytes
  };
  struct Stream {
    bool busy = false;            // a message of it is moving bytes (or stopped)
    std::deque<Queued> waiting;   // in the order they became ready to move
  };

  const StepGraph& graph_;
  const std::vector<sg4::Host*>& hosts_;
  RouteLatencies* latencies_;
  ReplayDynamics* dynamics_;
  bool fifo_;            // message_order fifo or connection: streams queue
  bool per_connection_;  // connection: one stream per pair, any kind
  double stall_timeout_seconds_;
  simgrid::kernel::timer::Timer* stall_timer_ = nullptr;
  bool task_times_;
  TaskTimes& out_;
  std::vector<TaskId> step_ends_;  // StepGraph::step_ends(), ascending
  double t0_ = 0;
  std::vector<int32_t> pending_;
  std::vector<uint32_t> first_succ_;
  std::vector<TaskId> succ_;
  std::vector<TaskId> ready_;
  std::vector<Slot> slots_;
  std::vector<size_t> free_slots_;
  std::vector<sg4::ActivityPtr> retired_;
  std::vector<RankCpu> cpus_;
  std::vector<Busy> busy_;
  std::unordered_map<uint64_t, Stream> streams_;
  size_t finished_ = 0;
};

void RankCpu::on_timer() {
  timer_ = nullptr;  // SimGrid frees it after this call
  advance();
  // Every task within rounding of the earliest finishes now, together.
  const double least = least_remaining();
  const double eps = 1e-12 * std::max(1.0, last_update_);
  finished_.clear();
  auto kept = std::remove_if(running_.begin(), running_.end(), [&](const Running& r) {
    if (r.remaining_seconds > least + eps && r.remaining_seconds > eps) return false;
    finished_.push_back(r.id);
    return true;
  });
  running_.erase(kept, running_.end());
  if (running_.empty() && !finished_.empty() && rank_ < run_->ranks()) run_->busy_period(rank_, busy_since_);
  reschedule();
  // May add tasks to this rank: they see the new state. finished_ is not touched
  // by that (only on_timer fills it).
  for (TaskId id : finished_) run_->compute_finished(id, rank_);
}

}  // namespace

std::vector<TaskTimes> simulate(const NetworkSpec& network, const std::vector<const StepGraph*>& graphs,
                                bool task_times, double start_seconds) {
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
  std::unique_ptr<ReplayDynamics> dynamics;
  if (!network.dynamics.empty()) dynamics = std::make_unique<ReplayDynamics>(network, hosts, start_seconds);

  std::vector<TaskTimes> times(graphs.size());
  GraphRun* current = nullptr;
  sg4::Activity::on_completion_cb([&current](const sg4::Activity& activity) {
    // A Comm cancelled because a link or node went down (GraphRun::on_dynamics) is not done.
    if (activity.get_state() != sg4::Activity::State::FINISHED) return;
    if (current)
      current->on_completion(static_cast<size_t>(reinterpret_cast<intptr_t>(activity.get_data<void>())));
  });
  for (size_t g = 0; g < graphs.size(); ++g) {
    reset_tcp_connections();  // each graph starts on an idle network
    GraphRun run(*graphs[g], hosts, latencies.get(), dynamics.get(), network.message_order,
                 dynamics && network.restart ? network.restart->stall_timeout_seconds : 0.0, task_times, times[g]);
    current = &run;
    run.start();
    engine->run();
    run.finish_busy();
    run.release();
    current = nullptr;
    if (dynamics) dynamics->stop();  // an empty graph never finished a task
    if (run.finished_count() != graphs[g]->size()) run.abandon();
    auto never_up = [g] {
      return InputError("network.dynamics", "step " + std::to_string(g + 1) + " of this replay waits for a link or " +
                                                "node that is down and never comes back up");
    };
    if (run.gave_up() && !dynamics->changes_later()) throw never_up();  // restarting would stall again, for ever
    if (run.gave_up()) {  // the run restarts from a checkpoint: the graphs after this one do not run now
      times.resize(g + 1);
      break;
    }
    if (run.finished_count() != graphs[g]->size() && dynamics) throw never_up();
    if (run.finished_count() != graphs[g]->size())
      throw std::runtime_error("sim::replay: " +
                               std::to_string(graphs[g]->size() - run.finished_count()) +
                               " tasks never finished");
  }
  return times;
}

}  // namespace lowband::sim::detail
