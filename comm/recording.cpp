#include "comm/recording.h"

#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "common/binary_io.h"
#include "sim/collectives.h"

namespace lowband::comm {

uint16_t RankLog::intern_kind(const std::string& kind) {
  for (size_t i = 0; i < kinds_.size(); ++i)
    if (kinds_[i] == kind) return uint16_t(i);
  if (kinds_.size() > std::numeric_limits<uint16_t>::max())
    throw std::logic_error("RankLog: more than 65536 distinct kind tags");
  kinds_.push_back(kind);
  return uint16_t(kinds_.size() - 1);
}

uint16_t RankLog::kind_index(const char* kind) {
  // Kinds are string literals: a handful of pointers, each seen many times.
  for (const auto& [p, i] : kind_of_pointer_)
    if (p == kind) return i;
  const uint16_t i = intern_kind(kind);
  kind_of_pointer_.emplace_back(kind, i);
  return i;
}

int32_t RankLog::group_index(const std::vector<int>& members) {
  for (size_t i = 0; i < groups_.size(); ++i)
    if (groups_[i] == members) return int32_t(i);
  groups_.push_back(members);
  return int32_t(groups_.size() - 1);
}

void RankLog::add(const Event& e) {
  Record r;
  r.type = e.type;
  r.kind = intern_kind(e.kind);
  r.comm_id = e.comm_id;
  r.flags = uint8_t((e.deferred ? kDeferred : 0) | (e.relay ? kRelay : 0) | (e.background ? kBackground : 0));
  switch (e.type) {
    case EventType::compute: r.amount = e.seconds; break;
    case EventType::join:
    case EventType::join_background:
    case EventType::step_end: break;
    case EventType::send:
    case EventType::recv:
      r.amount = e.bytes;
      r.a = e.peer;
      r.b = e.tag;
      break;
    default:  // collectives
      r.amount = e.bytes;
      r.a = group_index(e.members);
      r.b = e.peer;
  }
  records_.push_back(r);
}

Event RankLog::event(size_t i) const {
  const Record& r = records_.at(i);
  Event e;
  e.type = r.type;
  e.kind = kinds_[r.kind];
  e.comm_id = r.comm_id;
  e.deferred = (r.flags & kDeferred) != 0;
  e.relay = (r.flags & kRelay) != 0;
  e.background = (r.flags & kBackground) != 0;
  switch (r.type) {
    case EventType::compute: e.seconds = r.amount; break;
    case EventType::join:
    case EventType::join_background:
    case EventType::step_end: break;
    case EventType::send:
    case EventType::recv:
      e.bytes = r.amount;
      e.peer = r.a;
      e.tag = r.b;
      break;
    default:
      e.bytes = r.amount;
      e.members = groups_[size_t(r.a)];
      e.peer = r.b;
  }
  return e;
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
  RankLog::Record r;
  r.type = EventType::send;
  r.kind = log_.kind_index(wire.kind);
  r.amount = wire_bytes(wire, double(bytes));
  r.a = members_.at(size_t(dst));
  r.b = tag;
  r.comm_id = comm_id_;
  log_.add(r);
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
  RankLog::Record r;
  r.type = EventType::recv;
  r.kind = log_.kind_index(wire.kind);
  r.a = members_.at(size_t(src));
  r.b = tag;
  r.comm_id = comm_id_;
  log_.add(r);
}

void RecordingCommunicator::collective(EventType type, double buffer_bytes, const Wire& wire, int root) {
  if (group_ < 0) group_ = log_.group_index(members_);
  RankLog::Record r;
  r.type = type;
  r.kind = log_.kind_index(wire.kind);
  r.amount = wire_bytes(wire, buffer_bytes);
  r.a = group_;
  r.b = root < 0 ? -1 : members_.at(size_t(root));
  r.comm_id = comm_id_;
  r.flags = uint8_t((wire.deferred || wire.background ? RankLog::kDeferred : 0) |
                    (wire.background ? RankLog::kBackground : 0) |
                    (type == EventType::all_gather && wire.relay ? RankLog::kRelay : 0));
  log_.add(r);
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
  std::vector<int64_t> gathered(static_cast<size_t>(P)), mine{color};
  inner_->all_gather(mine.data(), gathered.data(), std::vector<int64_t>(size_t(P), 1), DType::i64, Wire("split"));
  const std::vector<int> colors(gathered.begin(), gathered.end());
  return wrap_split(inner_->split(color), colors);
}

std::unique_ptr<Communicator> RecordingCommunicator::split_known(const std::vector<int>& colors) {
  return wrap_split(inner_->split_known(colors), colors);
}

std::unique_ptr<Communicator> RecordingCommunicator::wrap_split(std::unique_ptr<Communicator> sub,
                                                                const std::vector<int>& colors) {
  const int id = (*next_comm_id_)++;
  const int color = colors.at(size_t(rank()));
  if (color < 0) return nullptr;
  std::vector<int> members;
  for (size_t r = 0; r < colors.size(); ++r)
    if (colors[r] == color) members.push_back(members_.at(r));
  return std::unique_ptr<Communicator>(
      new RecordingCommunicator(std::move(sub), log_, std::move(members), id, next_comm_id_));
}

// ---- serialisation (MPI: the logs of all processes gathered onto one) ----

std::string RankLog::serialize() const {
  std::ostringstream out;
  binary::write_u64(out, records_.size());
  for (const Event& e : events()) {
    binary::write_u64(out, uint64_t(e.type));
    binary::write_string(out, e.kind);
    binary::write_f64(out, e.seconds);
    binary::write_f64(out, e.bytes);
    binary::write_i64(out, e.peer);
    binary::write_i64(out, e.tag);
    binary::write_i64(out, e.comm_id);
    binary::write_u64(out, (e.deferred ? 1 : 0) | (e.relay ? 2 : 0) | (e.background ? 4 : 0));
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
    e.background = (flags & 4) != 0;
    const uint64_t m = binary::read_u64(in, "event members");
    for (uint64_t j = 0; j < m; ++j) e.members.push_back(int(binary::read_i64(in, "event member")));
    log.add(e);
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
  std::vector<TaskId> background; // ends of background collectives, joined at join_background
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

// A message's queue in assemble_step_graph: (communicator, source, destination, tag).
struct MessageKey {
  int32_t comm_id, src, dst, tag;
  bool operator==(const MessageKey& o) const {
    return comm_id == o.comm_id && src == o.src && dst == o.dst && tag == o.tag;
  }
};
struct MessageKeyHash {
  size_t operator()(const MessageKey& k) const {
    uint64_t h = uint64_t(uint32_t(k.comm_id)) * 0x9E3779B97F4A7C15ULL;
    h = (h ^ uint32_t(k.src)) * 0xC2B2AE3D27D4EB4FULL;
    h = (h ^ uint32_t(k.dst)) * 0x165667B19E3779F9ULL;
    h = (h ^ uint32_t(k.tag)) * 0x9E3779B97F4A7C15ULL;
    return size_t(h ^ (h >> 29));
  }
};

}  // namespace

sim::StepGraph assemble_step_graph(const std::vector<const RankLog*>& logs, sim::AllReduceAlgorithm all_reduce) {
  const int P = int(logs.size());
  bool relay = false;  // the relay, when an all-gather goes through it, is graph rank P
  for (const RankLog* log : logs)
    for (const RankLog::Record& e : log->records()) relay = relay || (e.flags & RankLog::kRelay) != 0;
  sim::StepGraph g(P + (relay ? 1 : 0));
  // Each log's kinds and groups, numbered once for all logs: kind[r][k] is the
  // graph's tag name of log r's kind k (interned by the graph), group[r][i] the
  // number of log r's group i among all distinct member lists.
  std::vector<std::vector<std::string_view>> kind(static_cast<size_t>(P));
  std::vector<std::vector<int>> group(static_cast<size_t>(P));
  std::map<std::vector<int>, int> group_number;
  std::vector<const std::vector<int>*> members_of;  // by group number
  for (int r = 0; r < P; ++r) {
    for (const std::string& k : logs[size_t(r)]->kinds()) kind[size_t(r)].push_back(k);
    for (const std::vector<int>& m : logs[size_t(r)]->groups()) {
      auto [it, added] = group_number.emplace(m, int(members_of.size()));
      if (added) members_of.push_back(&it->first);
      group[size_t(r)].push_back(it->second);
    }
  }
  std::vector<RankState> st(static_cast<size_t>(P));
  // Transfers sent and not yet received, per (comm, source, destination, tag), in order.
  std::unordered_map<MessageKey, std::deque<TaskId>, MessageKeyHash> in_flight;
  // Collectives reached by some members: per (the group's members, sequence number
  // on that member set). Not by communicator number: one split numbers all its
  // groups alike, and ranks that made different numbers of splits before (a
  // pipeline replica beside a context replica) number one group differently.
  // Blocking collectives on one member set run in one order on all its members.
  std::map<std::pair<int, int>, std::vector<int>> arrived;  // (group number, sequence) -> world ranks that reached it
  // [rank] -> (group number, collectives passed on it): a rank is in few groups.
  std::vector<std::vector<std::pair<int, int>>> coll_seq(static_cast<size_t>(P));
  auto passed = [&](int rank, int gr) -> int& {
    for (auto& [g, n] : coll_seq[size_t(rank)])
      if (g == gr) return n;
    return coll_seq[size_t(rank)].emplace_back(gr, 0).second;
  };

  auto join_deferred = [&](RankState& s) {
    s.cursor.insert(s.cursor.end(), s.deferred.begin(), s.deferred.end());
    s.deferred.clear();
  };
  int at_step_end = 0;  // ranks waiting at their next step_end
  sim::RankDeps after;
  std::string kind_tag;
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < P; ++r) {
      RankState& s = st[size_t(r)];
      const auto& ev = logs[size_t(r)]->records();
      while (s.next < ev.size() && !s.waiting) {
        const RankLog::Record& e = ev[s.next];
        if (e.type == EventType::join) {
          join_deferred(s);
        } else if (e.type == EventType::join_background) {
          s.cursor.insert(s.cursor.end(), s.background.begin(), s.background.end());
          s.background.clear();
        } else if (e.type == EventType::step_end) {
          // A barrier: one zero-second task on rank 0 after every rank's step
          // (its deferred collectives joined, its background ones not), which
          // every rank's next step waits for.
          join_deferred(s);
          s.waiting = true;
          if (++at_step_end < P) break;
          std::vector<TaskId> all;
          for (const RankState& each : st) all.insert(all.end(), each.cursor.begin(), each.cursor.end());
          const TaskId end = g.add_compute(0, 0.0, all, sim::kStepEndTag);
          for (int m = 0; m < P; ++m) {
            st[size_t(m)].cursor.assign(1, end);
            st[size_t(m)].waiting = false;
            ++st[size_t(m)].next;
          }
          at_step_end = 0;
          progress = true;
          continue;
        } else if (e.type == EventType::compute) {
          const TaskId t = g.add_compute(r, e.amount, s.cursor, kind[size_t(r)][e.kind]);
          s.cursor.assign(1, t);
        } else if (e.type == EventType::send) {
          const TaskId t = g.add_transfer(r, e.a, e.amount, s.cursor, kind[size_t(r)][e.kind]);
          in_flight[{e.comm_id, r, e.a, e.b}].push_back(t);
        } else if (e.type == EventType::recv) {
          auto it = in_flight.find({e.comm_id, e.a, r, e.b});
          if (it == in_flight.end() || it->second.empty()) break;  // its send is in a rank not replayed that far yet
          s.cursor.push_back(it->second.front());
          it->second.pop_front();
        } else {  // a collective: wait until every member has reached it
          const int gr = group[size_t(r)][size_t(e.a)];
          const std::vector<int>& members = *members_of[size_t(gr)];
          const std::pair<int, int> key{gr, passed(r, gr)};
          auto& who = arrived[key];
          who.push_back(r);
          s.waiting = true;
          if (who.size() < members.size()) break;
          after.resize(members.size());
          for (size_t i = 0; i < members.size(); ++i) after[i] = st[size_t(members[i])].cursor;
          std::vector<TaskId> done;
          const double S = e.amount;
          kind_tag = kind[size_t(r)][e.kind];
          if (members.size() == 1) {
            done = {g.add_compute(members[0], 0.0, after[0], kind_tag)};
          } else if (e.type == EventType::all_reduce) {
            done = sim::all_reduce(g, all_reduce, members, S, after, kind_tag);
          } else if (e.type == EventType::all_gather) {
            done = (e.flags & RankLog::kRelay) ? sim::relay_all_gather(g, members, P, S, after, kind_tag)
                                               : sim::ring_all_gather(g, members, S, after, kind_tag);
          } else if (e.type == EventType::reduce_scatter) {
            done = sim::ring_reduce_scatter(g, members, S, after, kind_tag);
          } else {
            done = direct_broadcast(g, members, e.b, S, after, kind_tag);
          }
          for (size_t i = 0; i < members.size(); ++i) {
            const int m = members[i];
            RankState& ms = st[size_t(m)];
            const RankLog::Record& me = logs[size_t(m)]->records()[ms.next];
            const bool agree = me.type == e.type && me.type != EventType::compute && me.type != EventType::join &&
                               me.type != EventType::send && me.type != EventType::recv &&
                               me.type != EventType::join_background && me.type != EventType::step_end &&
                               group[size_t(m)][size_t(me.a)] == gr && me.amount == e.amount &&
                               (me.flags & RankLog::kRelay) == (e.flags & RankLog::kRelay);
            if (!agree)
              throw std::logic_error("assemble_step_graph: ranks disagree on collective '" + kind_tag + "'");
            if (e.flags & RankLog::kBackground) ms.background.push_back(done[i]);
            else if (e.flags & RankLog::kDeferred) ms.deferred.push_back(done[i]);
            else ms.cursor.assign(1, done[i]);
            ms.waiting = false;
            ++ms.next;
            ++passed(m, gr);
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
    if (st[size_t(r)].next < logs[size_t(r)]->records().size())
      throw std::logic_error("assemble_step_graph: rank " + std::to_string(r) + " is stuck at event " +
                             std::to_string(st[size_t(r)].next) + " (a recv with no send, or a collective not all members reached)");
  for (const auto& [key, q] : in_flight)
    if (!q.empty())
      throw std::logic_error("assemble_step_graph: a message from rank " + std::to_string(key.src) +
                             " to rank " + std::to_string(key.dst) + " was never received");
  return g;
}

}  // namespace lowband::comm
