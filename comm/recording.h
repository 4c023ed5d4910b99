#pragma once
// Recording: what the ranks actually did in one step, turned into the step graph
// that sim::replay times on a modelled network.
//
// Each rank keeps a RankLog. Its RecordingCommunicator wraps the real transport
// (in-process or MPI), forwards every call to it and appends one event per call;
// the trainer appends the compute between calls (RankLog::compute, measured
// seconds or the device profile's). assemble_step_graph then replays the logs in
// program order:
// - a compute task depends on everything the rank waited for since its previous
//   compute task (its cursor), so one rank's tasks run one after another;
// - a send becomes a transfer that depends on the sender's cursor and does not
//   hold the sender back; the matching recv (same source, destination, tag and
//   communicator, in order) adds the transfer to the receiver's cursor;
// - a collective becomes the schedule sim/collectives.h builds for it (ring
//   all-reduce, all-gather, reduce-scatter; a broadcast is direct sends from the
//   root; an all-gather whose Wire says relay goes through the relay, graph
//   rank P one past the ranks: sim::relay_all_gather), starting from each
//   member's cursor; its end joins each member's cursor
//   (a deferred one's only at the member's next RankLog::join_deferred: a DDP
//   bucket travels while the backward and its exchanges go on).
// Bytes are the Wire label's modelled bytes where given, else the buffer's.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "sim/collectives.h"
#include "sim/step_graph.h"

namespace lowband::comm {

// join: the rank's deferred collectives; join_background: its background ones;
// step_end: every rank's step ends together (a barrier) and the next begins, in
// a graph that spans several steps (sim/step_graph.h: step_end tasks).
enum class EventType : uint8_t { compute, join, send, recv, all_reduce, all_gather, reduce_scatter, broadcast,
                                 join_background, step_end };

// One call or compute span, as a rank's log hands it out (RankLog::events()) and
// takes it in (RankLog::add). The log stores it compactly (RankLog::Record).
struct Event {
  EventType type = EventType::compute;
  std::string kind;        // the step graph's kind tag
  double seconds = 0;      // compute
  double bytes = 0;        // send: the message; collectives: one rank's whole buffer
  int peer = -1;           // send: destination, recv: source (world ranks); broadcast: root
  int tag = 0;             // send/recv
  int comm_id = 0;         // which communicator (0: the world; each split numbers the next)
  bool deferred = false;   // collectives
  bool background = false; // collectives (Wire::background)
  bool relay = false;      // all_gather: through the relay (Wire::relay)
  std::vector<int> members;  // collectives: the communicator's world ranks, in its rank order
};

class RankLog {
 public:
  // The stored form of an event: 24 bytes (a 512-rank step logs ~12.6 million).
  // Kind tags and collectives' member lists are interned per log: kind indexes
  // kinds(), a collective's `a` indexes groups().
  struct Record {
    double amount = 0;     // compute: seconds; send and collectives: bytes
    int32_t a = -1;        // send/recv: peer (world rank); collectives: index into groups()
    int32_t b = 0;         // send/recv: tag; broadcast: root (world rank), else -1
    int32_t comm_id = 0;
    uint16_t kind = 0;     // index into kinds()
    EventType type = EventType::compute;
    uint8_t flags = 0;     // kDeferred | kRelay | kBackground
  };
  static constexpr uint8_t kDeferred = 1, kRelay = 2, kBackground = 4;

  // A random-access range of the log's events, each materialised as an Event.
  class EventRange {
   public:
    class iterator {
     public:
      iterator(const RankLog* log, size_t i) : log_(log), i_(i) {}
      Event operator*() const { return log_->event(i_); }
      iterator& operator++() { ++i_; return *this; }
      bool operator!=(const iterator& o) const { return i_ != o.i_; }
      bool operator==(const iterator& o) const { return i_ == o.i_; }

     private:
      const RankLog* log_;
      size_t i_;
    };
    explicit EventRange(const RankLog* log) : log_(log) {}
    size_t size() const { return log_->records_.size(); }
    bool empty() const { return log_->records_.empty(); }
    Event operator[](size_t i) const { return log_->event(i); }
    iterator begin() const { return {log_, 0}; }
    iterator end() const { return {log_, log_->records_.size()}; }

   private:
    const RankLog* log_;
  };

  void compute(double seconds, const char* kind) {
    Record r;
    r.amount = seconds;
    r.kind = kind_index(kind);
    records_.push_back(r);
  }
  // What the rank computes next waits for its deferred collectives (the optimiser
  // after the gradient buckets).
  void join_deferred() {
    Record r;
    r.type = EventType::join;
    records_.push_back(r);
  }
  // What the rank computes next waits for its background collectives (the merge
  // of an outer sync issued steps before).
  void join_background() { mark(EventType::join_background); }
  // The step ends on every rank: the next step's events follow in the same log,
  // so that a background collective spans them (one graph for several steps).
  void step_end() { mark(EventType::step_end); }
  void add(const Event& event);
  void add(const Record& record) { records_.push_back(record); }
  void clear() { records_.clear(); }
  EventRange events() const { return EventRange(this); }
  Event event(size_t i) const;

  // The compact form, for assemble_step_graph.
  const std::vector<Record>& records() const { return records_; }
  const std::vector<std::string>& kinds() const { return kinds_; }
  const std::vector<std::vector<int>>& groups() const { return groups_; }
  uint16_t kind_index(const char* kind);
  int32_t group_index(const std::vector<int>& members);

  // For gathering the logs of processes (MPI) onto one rank.
  std::string serialize() const;
  static RankLog deserialize(const std::string& bytes);  // std::runtime_error if damaged

 private:
  uint16_t intern_kind(const std::string& kind);
  void mark(EventType type) {
    Record r;
    r.type = type;
    records_.push_back(r);
  }

  std::vector<Record> records_;
  std::vector<std::string> kinds_;
  std::vector<std::pair<const char*, uint16_t>> kind_of_pointer_;  // kind_index's fast path
  std::vector<std::vector<int>> groups_;
};

class RecordingCommunicator final : public Communicator {
 public:
  // The world: inner's rank r is world rank r.
  RecordingCommunicator(Communicator& inner, RankLog& log);
  // A group no split made (a dry run's: comm/null.h): inner's rank r is world
  // rank members[r], its events numbered comm_id.
  RecordingCommunicator(Communicator& inner, RankLog& log, std::vector<int> members, int comm_id);

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string describe() const override { return "recording " + inner_->describe(); }
  void send(int dst, int tag, const void* data, size_t bytes, const Wire& wire) override;
  void recv(int src, int tag, void* data, size_t bytes, const Wire& wire) override;
  void recv_message(int src, int tag, std::vector<uint8_t>& out, const Wire& wire) override;
  void all_reduce_sum(void* data, int64_t count, DType type, const Wire& wire) override;
  void all_gather(const void* in, void* out, const std::vector<int64_t>& counts, DType type,
                  const Wire& wire) override;
  void reduce_scatter_sum(const void* in, void* out, const std::vector<int64_t>& counts, DType type,
                          const Wire& wire) override;
  void broadcast(void* data, int64_t count, DType type, int root, const Wire& wire) override;
  void wait_deferred() override { inner_->wait_deferred(); }
  std::unique_ptr<Communicator> split(int color) override;
  std::unique_ptr<Communicator> split_known(const std::vector<int>& colors) override;

  using Communicator::all_reduce_sum;
  using Communicator::broadcast;

 private:
  RecordingCommunicator(std::unique_ptr<Communicator> inner, RankLog& log, std::vector<int> members,
                        int comm_id, std::shared_ptr<int> next_comm_id);
  void collective(EventType type, double buffer_bytes, const Wire& wire, int root = -1);
  // The recording view of inner's split `sub` (nullptr for a negative color).
  std::unique_ptr<Communicator> wrap_split(std::unique_ptr<Communicator> sub, const std::vector<int>& colors);
  void record_recv(int src, int tag, const Wire& wire);

  std::unique_ptr<Communicator> owned_;
  Communicator* inner_;
  RankLog& log_;
  std::vector<int> members_;  // world rank of each rank of this communicator
  int32_t group_ = -1;        // members_ in log_.groups(), once a collective needed it
  int comm_id_ = 0;
  std::shared_ptr<int> next_comm_id_;  // shared by a rank's communicators: splits stay numbered alike
};

// The step graph of one step from every rank's log (logs[r]: world rank r), of
// P ranks, or P + 1 when an all-gather went through the relay (rank P).
// std::logic_error when the logs do not match (a recv with no send, a
// collective some member never reached).
// all_reduce: how every all-reduce's bytes move (parallel.all_reduce).
sim::StepGraph assemble_step_graph(const std::vector<const RankLog*>& logs,
                                   sim::AllReduceAlgorithm all_reduce = sim::AllReduceAlgorithm::ring);

}  // namespace lowband::comm
