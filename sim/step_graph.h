#pragma once
// A step graph: what one training step does, as compute tasks (rank, seconds) and
// transfers (source, destination, bytes) with dependencies. The trainer records
// one from a real run, `estimate` builds one from a model's shapes, and
// sim::replay times it on a network. Tasks with no path between them may overlap.
//
// Stored compactly (a graph of 512 context ranks holds ~12 million tasks): one
// 24-byte record per task, every task's dependencies in one shared array, kind
// tags interned. tasks() and task() hand out Task views over that storage.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "sim/pod_buffer.h"

namespace lowband::sim {

using TaskId = int32_t;

inline constexpr const char* kStepEndTag = "step_end";  // StepGraph::step_ends

enum class TaskKind : uint8_t { compute, transfer };

// A read-only run of task ids: a task's dependencies, or the dependencies given to
// StepGraph::add_*. It does not own the ids: never keep one beyond the graph or
// the vector it views.
class DepSpan {
 public:
  using value_type = TaskId;
  using iterator = const TaskId*;
  using const_iterator = const TaskId*;

  DepSpan() = default;
  DepSpan(const TaskId* data, size_t size) : data_(data), size_(size) {}
  DepSpan(const std::vector<TaskId>& ids) : data_(ids.data()), size_(ids.size()) {}  // NOLINT: implicit by design

  const TaskId* begin() const { return data_; }
  const TaskId* end() const { return data_ + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  TaskId operator[](size_t i) const { return data_[i]; }
  std::vector<TaskId> to_vector() const { return {begin(), end()}; }
  operator std::vector<TaskId>() const { return to_vector(); }  // NOLINT: callers that keep a copy

  friend bool operator==(DepSpan a, DepSpan b);
  friend bool operator!=(DepSpan a, DepSpan b) { return !(a == b); }

 private:
  const TaskId* data_ = nullptr;
  size_t size_ = 0;
};

// One task, as a view into its graph: valid until the graph changes.
struct Task {
  TaskKind kind;
  int rank;                     // compute: the rank that runs it; transfer: the source
  int peer;                     // transfer: the destination; -1 for compute
  double seconds;               // compute only (0 for a transfer)
  double bytes;                 // transfer only (0 for a compute)
  const std::string& kind_tag;  // for accounting: "kv", "dkv", "grad_sync", "attention", ...
  DepSpan deps;
};

class StepGraph {
 public:
  // The stored form of a task: `amount` is seconds (compute) or bytes (transfer).
  struct Record {
    double amount = 0;
    int32_t rank = 0;
    int32_t peer = -1;
    TaskKind kind = TaskKind::compute;
    uint16_t tag = 0;  // index into tag_names()
  };

  // A random-access range of Task views (for (const Task& t : g.tasks()) ...).
  class TaskRange {
   public:
    class iterator {
     public:
      iterator(const StepGraph* g, TaskId id) : g_(g), id_(id) {}
      Task operator*() const { return g_->task(id_); }
      iterator& operator++() { ++id_; return *this; }
      bool operator!=(const iterator& o) const { return id_ != o.id_; }
      bool operator==(const iterator& o) const { return id_ == o.id_; }

     private:
      const StepGraph* g_;
      TaskId id_;
    };
    explicit TaskRange(const StepGraph* g) : g_(g) {}
    size_t size() const { return g_->size(); }
    bool empty() const { return g_->size() == 0; }
    Task operator[](size_t i) const { return g_->task(static_cast<TaskId>(i)); }
    iterator begin() const { return {g_, 0}; }
    iterator end() const { return {g_, static_cast<TaskId>(g_->size())}; }

   private:
    const StepGraph* g_;
  };

  explicit StepGraph(int ranks = 0);

  TaskId add_compute(int rank, double seconds, DepSpan deps, std::string_view kind_tag);
  TaskId add_transfer(int src, int dst, double bytes, DepSpan deps, std::string_view kind_tag);
  // A braced list of dependencies ({}, {a}, {a, b}), alive for the call.
  TaskId add_compute(int rank, double seconds, std::initializer_list<TaskId> deps, std::string_view kind_tag) {
    return add_compute(rank, seconds, DepSpan(deps.begin(), deps.size()), kind_tag);
  }
  TaskId add_transfer(int src, int dst, double bytes, std::initializer_list<TaskId> deps, std::string_view kind_tag) {
    return add_transfer(src, dst, bytes, DepSpan(deps.begin(), deps.size()), kind_tag);
  }

  int ranks() const { return ranks_; }
  size_t size() const { return records_.size(); }
  TaskRange tasks() const { return TaskRange(this); }
  Task task(TaskId id) const;

  // The compact form, for the replay's hot loops.
  const PodBuffer<Record>& records() const { return records_; }
  DepSpan deps(TaskId id) const {
    const size_t i = static_cast<size_t>(id);
    return {deps_.data() + dep_begin_[i], static_cast<size_t>(dep_begin_[i + 1] - dep_begin_[i])};
  }
  const std::vector<std::string>& tag_names() const { return tag_names_; }

  // A graph of several steps (comm::RankLog::step_end: an exchange that runs
  // beside them) has one zero-second task tagged kStepEndTag at the end of each
  // step but the last, after every rank's tasks of that step; step k's tasks are
  // the ids after step k − 1's end up to its own. Their ids, ascending (empty for
  // a graph of one step); the graph's steps; and steps [first, last] alone, its
  // dependencies on earlier tasks dropped (a step's own figures).
  std::vector<TaskId> step_ends() const;
  int steps() const { return int(step_ends().size()) + 1; }
  StepGraph steps_part(int first, int last) const;

  // The graph without the tasks of the ranks `drop` marks (compute on them,
  // transfers from or to them), dependencies on those tasks dropped: a late
  // replica's steps, which a round with partial participation does not wait for.
  StepGraph without_ranks(const std::vector<bool>& drop) const;
  // `next` appended as its ranks' logs would have continued: each of next's
  // tasks that waits for none of its own waits for every task of this graph
  // on its rank (compute; a transfer's source) that no task waits for — the
  // rank's last (a compute, a send, a receive). A rank with none starts at once.
  void append_per_rank(const StepGraph& next);

  // Bytes each rank sends, per kind tag; and compute seconds per rank.
  double bytes_sent(int rank, const std::string& kind_tag = "") const;
  double compute_seconds(int rank) const;

  // The graph as bytes and back (the replay process reads it: sim/replay.h);
  // read throws binary::BinaryFormatError for bytes no write gave.
  void write(std::ostream& out) const;
  static StepGraph read(std::istream& in);

 private:
  TaskId add(Record record, DepSpan deps, std::string_view kind_tag);
  uint16_t intern(std::string_view kind_tag);

  int ranks_;
  PodBuffer<Record> records_;
  PodBuffer<uint32_t> dep_begin_;  // task i's deps are deps_[dep_begin_[i] .. dep_begin_[i + 1])
  PodBuffer<TaskId> deps_;
  std::vector<std::string> tag_names_;
  uint16_t last_tag_ = 0;  // intern's first guess
};

}  // namespace lowband::sim
