#include "sim/step_graph.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace lowband::sim {

namespace {

void check_rank(int rank, int ranks, const char* what) {
  if (rank < 0 || rank >= ranks)
    throw std::invalid_argument(std::string("StepGraph: ") + what + " " + std::to_string(rank) +
                                " is outside 0.." + std::to_string(ranks - 1));
}

void check_deps(const std::vector<TaskId>& deps, size_t next_id) {
  for (TaskId dep : deps)
    if (dep < 0 || static_cast<size_t>(dep) >= next_id)
      throw std::invalid_argument("StepGraph: task " + std::to_string(next_id) + " depends on task " +
                                  std::to_string(dep) + ", which is not an earlier task");
}

}  // namespace

TaskId StepGraph::add_compute(int rank, double seconds, std::vector<TaskId> deps, std::string kind_tag) {
  check_rank(rank, ranks_, "rank");
  if (!(seconds >= 0) || !std::isfinite(seconds))
    throw std::invalid_argument("StepGraph: compute seconds must be finite and >= 0, got " +
                                std::to_string(seconds));
  check_deps(deps, tasks_.size());
  Task task;
  task.kind = TaskKind::compute;
  task.rank = rank;
  task.seconds = seconds;
  task.kind_tag = std::move(kind_tag);
  task.deps = std::move(deps);
  tasks_.push_back(std::move(task));
  return static_cast<TaskId>(tasks_.size() - 1);
}

TaskId StepGraph::add_transfer(int src, int dst, double bytes, std::vector<TaskId> deps, std::string kind_tag) {
  check_rank(src, ranks_, "source rank");
  check_rank(dst, ranks_, "destination rank");
  if (!(bytes >= 0) || !std::isfinite(bytes))
    throw std::invalid_argument("StepGraph: transfer bytes must be finite and >= 0, got " + std::to_string(bytes));
  check_deps(deps, tasks_.size());
  Task task;
  task.kind = TaskKind::transfer;
  task.rank = src;
  task.peer = dst;
  task.bytes = bytes;
  task.kind_tag = std::move(kind_tag);
  task.deps = std::move(deps);
  tasks_.push_back(std::move(task));
  return static_cast<TaskId>(tasks_.size() - 1);
}

double StepGraph::bytes_sent(int rank, const std::string& kind_tag) const {
  double total = 0;
  for (const Task& task : tasks_)
    if (task.kind == TaskKind::transfer && task.rank == rank && task.peer != rank &&
        (kind_tag.empty() || task.kind_tag == kind_tag))
      total += task.bytes;
  return total;
}

double StepGraph::compute_seconds(int rank) const {
  double total = 0;
  for (const Task& task : tasks_)
    if (task.kind == TaskKind::compute && task.rank == rank) total += task.seconds;
  return total;
}

}  // namespace lowband::sim
