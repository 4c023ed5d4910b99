#include "comm/in_process.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

namespace lowband::comm {

namespace {

struct Group;

// One collective call of one communicator: what each rank brought, and how far
// the ranks have got. Kept alive by the ranks inside the call.
struct Instance {
  std::string signature;  // the call and its arguments, which every rank must match
  uint64_t seq = 0;       // its place in the communicator's sequence of collectives
  int ranks = 0;
  std::vector<const void*> in;
  std::vector<int> colors;
  uint8_t* scratch = nullptr;  // all_reduce: the result (the group's scratch), one segment summed by each rank
  std::map<int, std::shared_ptr<Group>> groups;  // split: color -> the new communicator
  bool groups_made = false;
  int arrived = 0, done = 0, left = 0;
};

// A communicator's shared part: its id, its ranks' world ranks, its collectives in flight.
struct Group {
  uint64_t id = 0;
  std::vector<int> world_ranks;
  std::map<uint64_t, std::shared_ptr<Instance>> calls;  // by the call's sequence number
  // all_reduce's result buffer, reused: collective k+1 only writes it once every
  // rank has arrived there, so after every rank has copied collective k's result out.
  std::unique_ptr<uint8_t[]> scratch;
  size_t scratch_bytes = 0;
};

struct Waiter {
  bool active = false;
  std::function<bool()> ready;
  std::string what;
};

}  // namespace

struct InProcessWorld::State {
  std::mutex mutex;
  std::condition_variable changed;
  int ranks = 0;
  bool baton = true;
  int holder = -1;  // the world rank holding the baton, -1: none
  uint64_t next_id = 1;
  std::map<std::tuple<uint64_t, int, int, int>, std::deque<std::vector<uint8_t>>> mailboxes;
  std::vector<Waiter> waiting;  // by world rank
  std::vector<bool> finished;
  bool aborted = false;
  std::vector<std::exception_ptr> failures;  // by world rank: the exceptions that aborted the run
  std::exception_ptr deadlock;

  void abort() {
    aborted = true;
    holder = -1;
    changed.notify_all();
  }

  void declare_deadlock() {
    std::string message = "in-process comm: deadlock, every unfinished rank waits:";
    for (int r = 0; r < ranks; ++r)
      if (!finished[static_cast<size_t>(r)])
        message += " rank " + std::to_string(r) + " in " + waiting[static_cast<size_t>(r)].what + ";";
    deadlock = std::make_exception_ptr(std::logic_error(message));
    abort();
  }

  bool can_continue(int r) const {
    const Waiter& w = waiting[static_cast<size_t>(r)];
    return w.active && w.ready();
  }

  // Free-running: the caller just started waiting or finished; if no unfinished
  // rank can continue, none ever will.
  void check_deadlock() {
    for (int r = 0; r < ranks; ++r) {
      if (finished[static_cast<size_t>(r)]) continue;
      if (!waiting[static_cast<size_t>(r)].active || can_continue(r)) return;
    }
    bool any_unfinished = false;
    for (int r = 0; r < ranks; ++r) any_unfinished |= !finished[static_cast<size_t>(r)];
    if (any_unfinished) declare_deadlock();
  }

  // The baton's holder waits or finished: the lowest rank that can continue gets it.
  void hand_off() {
    holder = -1;
    if (aborted) return changed.notify_all();
    for (int r = 0; r < ranks && holder < 0; ++r)
      if (can_continue(r)) holder = r;
    if (holder < 0) {
      for (int r = 0; r < ranks; ++r)
        if (!finished[static_cast<size_t>(r)]) return declare_deadlock();
    }
    changed.notify_all();
  }

  void throw_if_aborted() const {
    if (aborted) throw Aborted("in-process comm: another rank failed; this rank's call was abandoned");
  }

  // Waits (lock held) until ready(); with the baton, gives it up meanwhile and
  // takes it back when handed over.
  void wait(std::unique_lock<std::mutex>& lock, int world_rank, std::function<bool()> ready, std::string what) {
    throw_if_aborted();
    if (ready()) return;
    Waiter& me = waiting[static_cast<size_t>(world_rank)];
    me.active = true;
    me.ready = std::move(ready);
    me.what = std::move(what);
    if (baton) {
      if (holder == world_rank) hand_off();
    } else {
      check_deadlock();
    }
    changed.wait(lock, [&] { return aborted || (baton ? holder == world_rank : me.ready()); });
    me.active = false;
    me.ready = nullptr;
    throw_if_aborted();
  }
};

namespace {

using State = InProcessWorld::State;

class InProcessComm final : public Communicator {
 public:
  InProcessComm(std::shared_ptr<State> state, std::shared_ptr<Group> group, int rank)
      : state_(std::move(state)), group_(std::move(group)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(group_->world_ranks.size()); }
  std::string describe() const override {
    return "in-process rank " + std::to_string(rank_) + " of " + std::to_string(size()) + " (communicator " +
           std::to_string(group_->id) + ", world rank " + std::to_string(world_rank()) + ", " +
           (state_->baton ? "baton" : "free-running") + ")";
  }

  void send(int dst, int tag, const void* data, size_t bytes, const Wire&) override {
    check_peer(dst, tag, "send");
    std::vector<uint8_t> message(bytes);
    if (bytes > 0) std::memcpy(message.data(), data, bytes);
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->throw_if_aborted();
    state_->mailboxes[{group_->id, rank_, dst, tag}].push_back(std::move(message));
    state_->changed.notify_all();
  }

  void recv(int src, int tag, void* data, size_t bytes, const Wire&) override {
    check_peer(src, tag, "recv");
    std::vector<uint8_t> message = take(src, tag);
    if (message.size() != bytes)
      throw std::logic_error("in-process comm: rank " + std::to_string(rank_) + " recv(src " + std::to_string(src) +
                             ", tag " + std::to_string(tag) + ") of " + std::to_string(bytes) + " bytes got a " +
                             std::to_string(message.size()) + "-byte message");
    if (bytes > 0) std::memcpy(data, message.data(), bytes);
  }

  void recv_message(int src, int tag, std::vector<uint8_t>& out, const Wire&) override {
    check_peer(src, tag, "recv_message");
    out = take(src, tag);
  }

  void all_reduce_sum(void* data, int64_t count, DType type, const Wire&) override {
    check_count(count, "all_reduce_sum");
    const size_t esize = dtype_bytes(type);
    if (type == DType::u8) sum_in_order({data}, data, 0, type);  // throws: no u8 sums
    auto call = enter("all_reduce_sum(count " + std::to_string(count) + ", " + name(type) + ")", data, 0,
                      static_cast<size_t>(count) * esize);
    // Each rank sums its even segment (in ring order) into the shared result; all copy it out.
    const std::vector<int64_t> counts = even_counts(count, size());
    int64_t offset = 0;
    for (int r = 0; r < rank_; ++r) offset += counts[static_cast<size_t>(r)];
    sum_in_order(segment_in_ring_order(*call, offset * esize), call->scratch + offset * esize,
                 counts[static_cast<size_t>(rank_)], type);
    all_done(call, "all_reduce_sum");
    if (count > 0) std::memcpy(data, call->scratch, static_cast<size_t>(count) * esize);
    leave(call);
  }

  void all_gather(const void* in, void* out, const std::vector<int64_t>& counts, DType type,
                  const Wire&) override {
    comm::check_counts(counts, size(), "in-process comm", "all_gather");
    const size_t esize = dtype_bytes(type);
    auto call = enter("all_gather(counts " + join(counts) + ", " + name(type) + ")", in);
    int64_t offset = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      uint8_t* to = static_cast<uint8_t*>(out) + offset * esize;
      if (counts[r] > 0 && to != call->in[r]) std::memcpy(to, call->in[r], static_cast<size_t>(counts[r]) * esize);
      offset += counts[r];
    }
    all_done(call, "all_gather");
    leave(call);
  }

  void reduce_scatter_sum(const void* in, void* out, const std::vector<int64_t>& counts, DType type,
                          const Wire&) override {
    comm::check_counts(counts, size(), "in-process comm", "reduce_scatter_sum");
    const size_t esize = dtype_bytes(type);
    if (type == DType::u8) sum_in_order({in}, out, 0, type);  // throws: no u8 sums
    auto call = enter("reduce_scatter_sum(counts " + join(counts) + ", " + name(type) + ")", in);
    int64_t offset = 0, total = 0;
    for (int r = 0; r < size(); ++r) {
      if (r < rank_) offset += counts[static_cast<size_t>(r)];
      total += counts[static_cast<size_t>(r)];
    }
    const int64_t n = counts[static_cast<size_t>(rank_)];
    const std::vector<const void*> segment = segment_in_ring_order(*call, offset * esize);
    // out may overlap this rank's input, which the others read until all are done.
    const auto* in_begin = static_cast<const uint8_t*>(in);
    const auto* out_begin = static_cast<const uint8_t*>(out);
    const bool overlaps = out_begin < in_begin + total * esize && in_begin < out_begin + n * esize;
    std::vector<uint8_t> temp(overlaps ? static_cast<size_t>(n) * esize : 0);
    sum_in_order(segment, overlaps ? static_cast<void*>(temp.data()) : out, n, type);
    all_done(call, "reduce_scatter_sum");
    if (overlaps && n > 0) std::memcpy(out, temp.data(), temp.size());
    leave(call);
  }

  void broadcast(void* data, int64_t count, DType type, int root, const Wire&) override {
    check_count(count, "broadcast");
    if (root < 0 || root >= size())
      throw std::logic_error("in-process comm: broadcast root " + std::to_string(root) + " out of range 0.." +
                             std::to_string(size() - 1));
    const size_t esize = dtype_bytes(type);
    auto call = enter("broadcast(count " + std::to_string(count) + ", " + name(type) + ", root " +
                          std::to_string(root) + ")",
                      data);
    if (rank_ != root && count > 0)
      std::memcpy(data, call->in[static_cast<size_t>(root)], static_cast<size_t>(count) * esize);
    all_done(call, "broadcast");
    leave(call);
  }

  std::unique_ptr<Communicator> split(int color) override {
    auto call = enter("split", nullptr, color);
    std::shared_ptr<Group> group;
    int new_rank = 0;
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      if (!call->groups_made) make_groups(*call);  // whoever gets here first; the result is the same
      if (color >= 0) {
        group = call->groups.at(color);
        for (int r = 0; r < rank_; ++r) new_rank += call->colors[static_cast<size_t>(r)] == color;
      }
    }
    leave(call);
    if (!group) return nullptr;
    return std::make_unique<InProcessComm>(state_, group, new_rank);
  }

 private:
  // The oldest message from src with tag, once there is one.
  std::vector<uint8_t> take(int src, int tag) {
    std::unique_lock<std::mutex> lock(state_->mutex);
    auto& box = state_->mailboxes[{group_->id, src, rank_, tag}];
    state_->wait(lock, world_rank(), [&box] { return !box.empty(); },
                 "recv(src " + std::to_string(src) + ", tag " + std::to_string(tag) + ") on communicator " +
                     std::to_string(group_->id));
    std::vector<uint8_t> message = std::move(box.front());
    box.pop_front();
    return message;
  }

  int world_rank() const { return group_->world_ranks[static_cast<size_t>(rank_)]; }

  // This rank's segment (from `offset_bytes` in every rank's buffer) of the
  // ranks' inputs, in the order the reduction adds them (ring_sum_order).
  std::vector<const void*> segment_in_ring_order(const Instance& call, int64_t offset_bytes) const {
    std::vector<const void*> in;
    for (int r : ring_sum_order(rank_, size()))
      in.push_back(static_cast<const uint8_t*>(call.in[static_cast<size_t>(r)]) + offset_bytes);
    return in;
  }

  static std::string name(DType type) {
    switch (type) {
      case DType::f32: return "f32";
      case DType::f64: return "f64";
      case DType::i64: return "i64";
      case DType::u8: return "u8";
    }
    return "?";
  }
  static std::string join(const std::vector<int64_t>& values) {
    std::string s;
    for (int64_t v : values) s += (s.empty() ? "" : ",") + std::to_string(v);
    return s;
  }

  void check_peer(int peer, int tag, const char* call) const {
    if (peer < 0 || peer >= size())
      throw std::logic_error(std::string("in-process comm: ") + call + " peer " + std::to_string(peer) +
                             " out of range 0.." + std::to_string(size() - 1));
    if (tag < 0) throw std::logic_error(std::string("in-process comm: ") + call + " tag must be >= 0");
  }
  static void check_count(int64_t count, const char* call) {
    if (count < 0) throw std::logic_error(std::string("in-process comm: ") + call + " of a negative count");
  }

  // Deposits this rank's buffer in the communicator's next collective and waits
  // until every rank has.
  std::shared_ptr<Instance> enter(const std::string& signature, const void* in, int color = 0,
                                  size_t scratch_bytes = 0) {
    std::unique_lock<std::mutex> lock(state_->mutex);
    state_->throw_if_aborted();
    const uint64_t seq = next_call_++;
    auto& slot = group_->calls[seq];
    if (!slot) {
      slot = std::make_shared<Instance>();
      slot->signature = signature;
      slot->ranks = size();
      slot->in.assign(static_cast<size_t>(size()), nullptr);
      slot->colors.assign(static_cast<size_t>(size()), -1);
      slot->seq = seq;
    } else if (slot->signature != signature) {
      throw std::logic_error("in-process comm: collective #" + std::to_string(seq) + " on communicator " +
                             std::to_string(group_->id) + ": rank " + std::to_string(rank_) + " called " +
                             signature + " where another rank called " + slot->signature);
    }
    std::shared_ptr<Instance> call = slot;
    call->in[static_cast<size_t>(rank_)] = in;
    call->colors[static_cast<size_t>(rank_)] = color;
    if (++call->arrived == call->ranks && scratch_bytes > 0) {
      // The last to arrive: every rank has left the previous collective.
      if (group_->scratch_bytes < scratch_bytes) {
        group_->scratch.reset(new uint8_t[scratch_bytes]);  // uninitialised: every byte gets summed into
        group_->scratch_bytes = scratch_bytes;
      }
      call->scratch = group_->scratch.get();
    }
    state_->changed.notify_all();
    state_->wait(lock, world_rank(), [call] { return call->arrived == call->ranks; },
                 signature + " #" + std::to_string(seq) + " on communicator " + std::to_string(group_->id));
    return call;
  }

  void all_done(const std::shared_ptr<Instance>& call, const char* what) {
    std::unique_lock<std::mutex> lock(state_->mutex);
    ++call->done;
    state_->changed.notify_all();
    state_->wait(lock, world_rank(), [call] { return call->done == call->ranks; },
                 std::string(what) + " (the others finishing) on communicator " + std::to_string(group_->id));
  }

  void leave(const std::shared_ptr<Instance>& call) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (++call->left == call->ranks) group_->calls.erase(call->seq);
  }

  void make_groups(Instance& call) {
    for (int r = 0; r < size(); ++r) {
      const int c = call.colors[static_cast<size_t>(r)];
      if (c < 0) continue;
      auto& g = call.groups[c];
      if (!g) {
        g = std::make_shared<Group>();
        g->id = state_->next_id++;
      }
      g->world_ranks.push_back(group_->world_ranks[static_cast<size_t>(r)]);
    }
    call.groups_made = true;
  }

  std::shared_ptr<State> state_;
  std::shared_ptr<Group> group_;
  int rank_;
  uint64_t next_call_ = 0;
};

}  // namespace

InProcessWorld::InProcessWorld(int ranks, bool baton) : ranks_(ranks), baton_(baton) {
  if (ranks < 1) throw std::logic_error("InProcessWorld: need at least 1 rank, got " + std::to_string(ranks));
}

InProcessWorld::~InProcessWorld() = default;

void InProcessWorld::run(const std::function<void(Communicator&)>& fn) {
  auto state = std::make_shared<State>();
  state->ranks = ranks_;
  state->baton = baton_;
  state->waiting.resize(static_cast<size_t>(ranks_));
  state->finished.assign(static_cast<size_t>(ranks_), false);
  state->failures.resize(static_cast<size_t>(ranks_));
  auto world = std::make_shared<Group>();
  world->id = 0;
  for (int r = 0; r < ranks_; ++r) world->world_ranks.push_back(r);
  if (baton_) {
    // Rank 0 starts; the others wait for the baton as ranks that can continue.
    state->holder = 0;
    for (int r = 1; r < ranks_; ++r) state->waiting[static_cast<size_t>(r)] = {true, [] { return true; }, "start"};
  }

  auto rank_main = [&fn, state, world](int r) {
    try {
      InProcessComm comm(state, world, r);
      bool start = true;
      if (state->baton) {
        std::unique_lock<std::mutex> lock(state->mutex);
        state->changed.wait(lock, [&] { return state->aborted || state->holder == r; });
        state->waiting[static_cast<size_t>(r)] = {};
        start = !state->aborted;
      }
      if (start) fn(comm);
    } catch (const Aborted&) {
      // Another rank's failure: that one is reported.
    } catch (...) {
      std::lock_guard<std::mutex> lock(state->mutex);
      state->failures[static_cast<size_t>(r)] = std::current_exception();
      state->abort();
    }
    std::lock_guard<std::mutex> lock(state->mutex);
    state->finished[static_cast<size_t>(r)] = true;
    state->waiting[static_cast<size_t>(r)] = {};
    if (state->baton) {
      if (state->holder == r) state->hand_off();
    } else if (!state->aborted) {
      state->check_deadlock();
    }
    state->changed.notify_all();
  };

  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(ranks_));
  try {
    for (int r = 0; r < ranks_; ++r) threads.emplace_back(rank_main, r);
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      for (int r = static_cast<int>(threads.size()); r < ranks_; ++r) state->finished[static_cast<size_t>(r)] = true;
      state->abort();
    }
    for (auto& t : threads) t.join();
    throw;
  }
  for (auto& t : threads) t.join();
  for (const auto& failure : state->failures)
    if (failure) std::rethrow_exception(failure);
  if (state->deadlock) std::rethrow_exception(state->deadlock);
}

}  // namespace lowband::comm
