#include "comm/recording.h"

#include <deque>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "common/binary_io.h"
#include "sim/collectives.h"

namespace lowband::comm {

void RankLog::compute(double seconds, const char* kind) {
  Event e;
  e.type = EventType::compute;
  e.kind = kind;
  e.seconds = seconds;
  events_.push_back(std::move(e));
}

namespace {

double wire_bytes(const Wire& wire, double buffer_bytes) { return wire.bytes >= 0 ? wire.bytes : buffer_bytes; }

int64_t total(const std::vector<int64_t>& counts) {
  return std::accumulate(counts.begin(), counts.end(), int64_t{0});
}

}  // namespace

RecordingCommunicator::RecordingCommunicator(Communicator& inner, RankLog& log)
    : inner_(&inner), log_(log), next_comm_id_(std::make_shared<int>(1)) {
  members_.resize(size_t(inner.size()));
  std::iota(members_.begin(), members_.end(), 0);
}

RecordingCommunicator::RecordingCommunicator(Communicator& inner, RankLog& log, std::vector<int> members, int comm_id)
    : inner_(&inner), log_(log), members_(std::move(members)), comm_id_(comm_id),
      next_comm_id_(std::make_shared<int>(comm_id + 1)) {
  if (members_.size() != size_t(inner.size()))
    throw std::logic_error("recording communicator: " + std::to_string(members_.size()) + " members for " +
                           std::to_string(inner.size()) + " ranks");
}

RecordingCommunicator::RecordingCommunicator(std::unique_ptr<Communicator> inner, RankLog& log,
                                             std::vector<int> members, int comm_id,
                                             std::shared_ptr<int> next_comm_id)
    : owned_(std::move(inner)), inner_(owned_.get()), log_(log), members_(std::move(members)),
      comm_id_(comm_id), next_comm_id_(std::move(next_comm_id)) {}

void RecordingCommunicator::send(int dst, int tag, const void* data, size_t bytes, const Wire& wire) {
  inner_->send(dst, tag, data, bytes, wire);
  Event e;
  e.type = EventType::send;
  e.kind = wire.kind;
  e.bytes = wire_bytes(wire, double(bytes));
  e.peer = members_.at(size_t(dst));
  e.tag = tag;
  e.comm_id = comm_id_;
  log_.add(std::move(e));
}

void RecordingCommunicator::recv(int src, int tag, void* data, size_t bytes, const Wire& wire) {
  inner_->recv(src, tag, data, bytes, wire);
  record_recv(src, tag, wire);
}

void RecordingCommunicator::recv_message(int src, int tag, std::vector<uint8_t>& out, const Wire& wire) {
  inner_->recv_message(src, tag, out, wire);
  record_recv(src, tag, wire);
}

void RecordingCommunicator::record_recv(int src, int tag, const Wire& wire) {
  Event e;
  e.type = EventType::recv;
  e.kind = wire.kind;
  e.peer = members_.at(size_t(src));
  e.tag = tag;
  e.comm_id = comm_id_;
  log_.add(std::move(e));
}

void RecordingCommunicator::collective(EventType type, double buffer_bytes, const Wire& wire, int root) {
  Event e;
  e.type = type;
  e.kind = wire.kind;
  e.bytes = wire_bytes(wire, buffer_bytes);
  e.peer = root < 0 ? -1 : members_.at(size_t(root));
  e.comm_id = comm_id_;
  e.deferred = wire.deferred;
  e.relay = type == EventType::all_gather && wire.relay;
  e.members = members_;
  log_.add(std::move(e));
}

void RecordingCommunicator::all_reduce_sum(void* data, int64_t count, DType type, const Wire& wire) {
  inner_->all_reduce_sum(data, count, type, wire);
  collective(EventType::all_reduce, double(count) * double(dtype_bytes(type)), wire);
}

void RecordingCommunicator::all_gather(const void* in, void* out, const std::vector<int64_t>& counts,
                                       DType type, const Wire& wire) {
  inner_->all_gather(in, out, counts, type, wire);
  collective(EventType::all_gather, double(total(counts)) * double(dtype_bytes(type)), wire);
}

void RecordingCommunicator::reduce_scatter_sum(const void* in, void* out, const std::vector<int64_t>& counts,
                                               DType type, const Wire& wire) {
  inner_->reduce_scatter_sum(in, out, counts, type, wire);
  collective(EventType::reduce_scatter, double(total(counts)) * double(dtype_bytes(type)), wire);
}

void RecordingCommunicator::broadcast(void* data, int64_t count, DType type, int root, const Wire& wire) {
  inner_->broadcast(data, count, type, root, wire);
  collective(EventType::broadcast, double(count) * double(dtype_bytes(type)), wire, root);
}

std::unique_ptr<Communicator> RecordingCommunicator::split(int color) {
  // Which world ranks share this rank's color: bookkeeping, not recorded.
  const int P = size();
  std::vector<int64_t> colors(static_cast<size_t>(P)), mine{color};
  inner_->all_gather(mine.data(), colors.data(), std::vector<int64_t>(size_t(P), 1), DType::i64, Wire("split"));
  const int id = (*next_comm_id_)++;
  std::unique_ptr<Communicator> sub = inner_->split(color);
  if (color < 0) return nullptr;
  std::vector<int> members;
  for (int r = 0; r < P; ++r)
    if (colors[size_t(r)] == color) members.push_back(members_[size_t(r)]);
  return std::unique_ptr<Communicator>(
      new RecordingCommunicator(std::move(sub), log_, std::move(members), id, next_comm_id_));
}

// ---- serialisation (MPI: the logs of all processes gathered onto one) ----

std::string RankLog::serialize() const {
  std::ostringstream out;
  binary::write_u64(out, events_.size());
  for (const Event& e : events_) {
    binary::write_u64(out, uint64_t(e.type));
    binary::write_string(out, e.kind);
    binary::write_f64(out, e.seconds);
    binary::write_f64(out, e.bytes);
    binary::write_i64(out, e.peer);
    binary::write_i64(out, e.tag);
    binary::write_i64(out, e.comm_id);
    binary::write_u64(out, (e.deferred ? 1 : 0) | (e.relay ? 2 : 0));
    binary::write_u64(out, e.members.size());
    for (int m : e.members) binary::write_i64(out, m);
  }
  return out.str();
}

RankLog RankLog::deserialize(const std::string& bytes) {
  std::istringstream in(bytes);
  RankLog log;
  const uint64_t n = binary::read_u64(in, "log events");
  for (uint64_t i = 0; i < n; ++i) {
    Event e;
    e.type = EventType(binary::read_u64(in, "event type"));
    e.kind = binary::read_string(in, "event kind");
    e.seconds = binary::read_f64(in, "event seconds");
    e.bytes = binary::read_f64(in, "event bytes");
    e.peer = int(binary::read_i64(in, "event peer"));
    e.tag = int(binary::read_i64(in, "event tag"));
    e.comm_id = int(binary::read_i64(in, "event comm"));
    const uint64_t flags = binary::read_u64(in, "event flags");
    e.deferred = (flags & 1) != 0;
    e.relay = (flags & 2) != 0;
    const uint64_t m = binary::read_u64(in, "event members");
    for (uint64_t j = 0; j < m; ++j) e.members.push_back(int(binary::read_i64(in, "event member")));
    log.events_.push_back(std::move(e));
  }
  return log;
}

// ---- the step graph from the logs ----

namespace {

using sim::TaskId;

struct RankState {
  size_t next = 0;                // index of the next event
  std::vector<TaskId> cursor;     // what the rank's next task waits for
  std::vector<TaskId> deferred;   // ends of deferred collectives, joined at the next blocking call
  bool waiting = false;           // registered at a collective not yet complete
};

// Direct sends from the root; each member's end is a zero-second task after its part.
std::vector<TaskId> direct_broadcast(sim::StepGraph& g, const std::vector<int>& members, int root,
                                     double bytes, const sim::RankDeps& after, const std::string& kind) {
  std::vector<TaskId> done(members.size());
  size_t root_i = 0;
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i] == root) root_i = i;
  std::vector<TaskId> sends;
  for (size_t i = 0; i < members.size(); ++i) {
    if (i == root_i) continue;
    const TaskId t = g.add_transfer(root, members[i], bytes, after[root_i], kind);
    sends.push_back(t);
    std::vector<TaskId> deps = after[i];
    deps.push_back(t);
    done[i] = g.add_compute(members[i], 0.0, deps, kind);
  }
  std::vector<TaskId> root_deps = after[root_i];
  root_deps.insert(root_deps.end(), sends.begin(), sends.end());
  done[root_i] = g.add_compute(root, 0.0, root_deps, kind);
  return done;
}

}  // namespace


sim::StepGraph assemble_step_graph(const std::vector<const RankLog*>& logs) {
  const int P = int(logs.size());
  bool relay = false;  // the relay, when an all-gather goes through it, is graph rank P
  for (const RankLog* log : logs)
    for (const Event& e : log->events()) relay = relay || e.relay;
  sim::StepGraph g(P + (relay ? 1 : 0));
  std::vector<RankState> st(static_cast<size_t>(P));
  // Transfers sent and not yet received, per (comm, source, destination, tag), in order.
  std::map<std::tuple<int, int, int, int>, std::deque<TaskId>> in_flight;
  // Collectives reached by some members: per (the group's members, sequence number
  // on that member set). Not by communicator number: one split numbers all its
  // groups alike, and ranks that made different numbers of splits before (a
  // pipeline replica beside a context replica) number one group differently.
  // Blocking collectives on one member set run in one order on all its members.
  using Group = std::vector<int>;
  std::map<std::pair<Group, int>, std::vector<int>> arrived;       // -> world ranks that reached it
  std::vector<std::map<Group, int>> coll_seq(static_cast<size_t>(P));  // [rank][members] -> collectives passed

  auto join_deferred = [&](RankState& s) {
    s.cursor.insert(s.cursor.end(), s.deferred.begin(), s.deferred.end());
    s.deferred.clear();
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < P; ++r) {
      RankState& s = st[size_t(r)];
      const auto& ev = logs[size_t(r)]->events();
      while (s.next < ev.size() && !s.waiting) {
        const Event& e = ev[s.next];
        if (e.type == EventType::join) {
          join_deferred(s);
        } else if (e.type == EventType::compute) {
          s.cursor = {g.add_compute(r, e.seconds, s.cursor, e.kind)};
        } else if (e.type == EventType::send) {
          in_flight[{e.comm_id, r, e.peer, e.tag}].push_back(g.add_transfer(r, e.peer, e.bytes, s.cursor, e.kind));
        } else if (e.type == EventType::recv) {
          auto& q = in_flight[{e.comm_id, e.peer, r, e.tag}];
          if (q.empty()) break;  // its send is in a rank not replayed that far yet
          s.cursor.push_back(q.front());
          q.pop_front();
        } else {  // a collective: wait until every member has reached it
          const std::pair<Group, int> key{e.members, coll_seq[size_t(r)][e.members]};
          auto& who = arrived[key];
          who.push_back(r);
          s.waiting = true;
          if (who.size() < e.members.size()) break;
          sim::RankDeps after;
          for (int m : e.members) after.push_back(st[size_t(m)].cursor);
          std::vector<TaskId> done;
          const double S = e.bytes;
          if (e.members.size() == 1) {
            done = {g.add_compute(e.members[0], 0.0, after[0], e.kind)};
          } else if (e.type == EventType::all_reduce) {
            done = sim::ring_all_reduce(g, e.members, S, after, e.kind);
          } else if (e.type == EventType::all_gather) {
            done = e.relay ? sim::relay_all_gather(g, e.members, P, S, after, e.kind)
                           : sim::ring_all_gather(g, e.members, S, after, e.kind);
          } else if (e.type == EventType::reduce_scatter) {
            done = sim::ring_reduce_scatter(g, e.members, S, after, e.kind);
          } else {
            done = direct_broadcast(g, e.members, e.peer, S, after, e.kind);
          }
          for (size_t i = 0; i < e.members.size(); ++i) {
            RankState& ms = st[size_t(e.members[i])];
            const Event& me = logs[size_t(e.members[i])]->events()[ms.next];
            if (me.type != e.type || me.members != e.members || me.bytes != e.bytes || me.relay != e.relay)
              throw std::logic_error("assemble_step_graph: ranks disagree on collective '" + e.kind + "'");
            if (e.deferred) ms.deferred.push_back(done[i]);
            else ms.cursor = {done[i]};
            ms.waiting = false;
            ++ms.next;
            ++coll_seq[size_t(e.members[i])][e.members];
          }
          arrived.erase(key);
          progress = true;
          continue;
        }
        ++s.next;
        progress = true;
      }
    }
  }
  for (int r = 0; r < P; ++r)
    if (st[size_t(r)].next < logs[size_t(r)]->events().size())
      throw std::logic_error("assemble_step_graph: rank " + std::to_string(r) + " is stuck at event " +
                             std::to_string(st[size_t(r)].next) + " (a recv with no send, or a collective not all members reached)");
  for (const auto& [key, q] : in_flight)
    if (!q.empty())
      throw std::logic_error("assemble_step_graph: a message from rank " + std::to_string(std::get<1>(key)) +
                             " to rank " + std::to_string(std::get<2>(key)) + " was never received");
  return g;
}

}  // namespace lowband::comm
