#pragma once
// A step graph: what one training step does, as compute tasks (rank, seconds) and
// transfers (source, destination, bytes) with dependencies. The trainer records
// one from a real run, `estimate` builds one from a model's shapes, and
// sim::replay times it on a network. Tasks with no path between them may overlap.
#include <cstdint>
#include <string>
#include <vector>

namespace lowband::sim {

using TaskId = int32_t;

enum class TaskKind : uint8_t { compute, transfer };

struct Task {
  TaskKind kind = TaskKind::compute;
  int rank = 0;         // compute: the rank that runs it; transfer: the source
  int peer = -1;        // transfer: the destination; -1 for compute
  double seconds = 0;   // compute only
  double bytes = 0;     // transfer only
  std::string kind_tag; // what it is, for accounting: "kv", "dkv", "grad_sync", "attention", ...
  std::vector<TaskId> deps;
};

class StepGraph {
 public:
  explicit StepGraph(int ranks = 0) : ranks_(ranks) {}

  TaskId add_compute(int rank, double seconds, std::vector<TaskId> deps, std::string kind_tag);
  TaskId add_transfer(int src, int dst, double bytes, std::vector<TaskId> deps, std::string kind_tag);

  int ranks() const { return ranks_; }
  const std::vector<Task>& tasks() const { return tasks_; }
  const Task& task(TaskId id) const { return tasks_[static_cast<size_t>(id)]; }

  // Bytes each rank sends, per kind tag; and compute seconds per rank.
  double bytes_sent(int rank, const std::string& kind_tag = "") const;
  double compute_seconds(int rank) const;

 private:
  int ranks_;
  std::vector<Task> tasks_;
};

}  // namespace lowband::sim
