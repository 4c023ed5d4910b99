#include "runtime/parallel/rank_world.h"

#include <omp.h>

#include <chrono>
#include <stdexcept>

#include "comm/null.h"
#include "common/error.h"

#include "runtime/parallel/layout.h"

namespace lowband::parallel {
namespace {

// One string per process onto every process (not recorded: bookkeeping).
std::vector<std::string> all_gather_strings(comm::Communicator& comm, const std::string& mine) {
  const int P = comm.size();
  std::vector<int64_t> sizes(static_cast<size_t>(P)), one{int64_t(mine.size())};
  comm.all_gather(one.data(), sizes.data(), std::vector<int64_t>(size_t(P), 1), comm::DType::i64, "bookkeeping");
  int64_t total = 0;
  for (int64_t n : sizes) total += n;
  std::string all(size_t(total), '\0');
  comm.all_gather(mine.data(), all.data(), sizes, comm::DType::u8, "bookkeeping");
  std::vector<std::string> out;
  int64_t at = 0;
  for (int64_t n : sizes) out.push_back(all.substr(size_t(at), size_t(n))), at += n;
  return out;
}

}  // namespace

RankWorld::RankWorld(int ranks, comm::Communicator* comm, const std::string& key) : ranks_(ranks), external_(comm) {
  if (!comm) {
    world_ = std::make_unique<comm::InProcessWorld>(ranks);
    for (int r = 0; r < ranks_; ++r) local_.push_back(r);
    logs_.resize(size_t(ranks_));
    return;
  }
  if (comm->size() != ranks)
    throw InputError(key, std::to_string(ranks) + " ranks, but " + std::to_string(comm->size()) +
                              " processes (mpirun -np " + std::to_string(ranks) + ")");
  local_.push_back(comm->rank());
  logs_.resize(1);
}

RankWorld::RankWorld(int ranks, Dry) : ranks_(ranks), dry_(true) {
  for (int r = 0; r < ranks_; ++r) local_.push_back(r);
  logs_.resize(size_t(ranks_));
}

int RankWorld::local_index(int rank) const {
  if (!external_) return rank >= 0 && rank < ranks_ ? rank : -1;
  return rank == external_->rank() ? 0 : -1;
}

void RankWorld::run(const std::function<void(int, comm::Communicator&)>& fn, bool record) {
  if (record)
    for (auto& log : logs_) window_open_ ? log.step_end() : log.clear();
  auto one = [&](comm::Communicator& comm) {
    if (!record) return fn(comm.rank(), comm);
    comm::RecordingCommunicator recording(comm, log(comm.rank()));
    fn(comm.rank(), recording);
  };
  if (external_) return one(*external_);
  if (dry_) {
    for (int r = 0; r < ranks_; ++r) {
      comm::NullCommunicator null(r, ranks_);
      one(null);
    }
    return;
  }
  const int threads = omp_get_max_threads();  // a new thread starts from OpenMP's default
  world_->run([&](comm::Communicator& comm) {
    omp_set_num_threads(threads);
    one(comm);
  });
}

sim::StepGraph RankWorld::assemble_graph(const Scenario& scenario) {
  auto on_nodes = [&](sim::StepGraph g) {  // the ranks' graph on parallel.placement's and the relay's nodes
    if (scenario.parallel.placement.empty() && g.ranks() == ranks_) return g;  // as it is: moved, not copied
    return place_on_nodes(g, Layout(scenario.parallel));
  };
  if (!external_) {
    std::vector<const comm::RankLog*> logs;
    for (const auto& log : logs_) logs.push_back(&log);
    return on_nodes(comm::assemble_step_graph(logs, scenario.parallel.all_reduce));
  }
  const std::vector<std::string> blobs = all_gather_strings(*external_, logs_[0].serialize());
  if (external_->rank() != 0) return sim::StepGraph(ranks_);
  std::vector<comm::RankLog> logs;
  for (const auto& b : blobs) logs.push_back(comm::RankLog::deserialize(b));
  std::vector<const comm::RankLog*> ptrs;
  for (const auto& log : logs) ptrs.push_back(&log);
  return on_nodes(comm::assemble_step_graph(ptrs, scenario.parallel.all_reduce));
}

RankWorld::StepBooks RankWorld::close_step(const Scenario& scenario, double local_kernel_seconds, bool record,
                                           bool keep_open) {
  StepBooks books;
  const auto t0 = std::chrono::steady_clock::now();
  books.kernel_wall_seconds = sum_over_processes(local_kernel_seconds);
  window_open_ = record && keep_open;
  if (record && !keep_open) books.graph = assemble_graph(scenario);
  books.record_wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return books;
}

sim::StepGraph RankWorld::close_window(const Scenario& scenario) {
  if (!window_open_) return sim::StepGraph(0);
  window_open_ = false;
  return assemble_graph(scenario);
}

double RankWorld::sum_over_processes(double x) const {
  if (external_) external_->all_reduce_sum(&x, 1, "bookkeeping");
  return x;
}

std::vector<std::string> RankWorld::gather(const std::function<std::string(int)>& blob) const {
  if (!external_) {
    std::vector<std::string> out;
    for (int r = 0; r < ranks_; ++r) out.push_back(blob(r));
    return out;
  }
  return all_gather_strings(*external_, blob(external_->rank()));
}

}  // namespace lowband::parallel
