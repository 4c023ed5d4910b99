#include "runtime/parallel/context_trainer.h"

#include <omp.h>

#include <chrono>

#include "common/error.h"
#include "runtime/compress/make_codec.h"
#include "runtime/parallel/context_schedule.h"
#include "runtime/parallel/layout.h"

namespace lowband::parallel {
namespace {

const kernels::Backend& backend_for(const TrainingConfig& t) {
  try {
    return kernels::backend(t.backend == "cuda" ? kernels::Device::cuda : kernels::Device::cpu);
  } catch (const std::runtime_error& e) {
    throw InputError("training.backend", std::string("\"") + t.backend + "\": " + e.what());
  }
}

}  // namespace

ContextTrainer::ContextTrainer(const Scenario& s, ComputeTiming timing)
    : scenario_(s), k_(&backend_for(s.training)), P_(s.parallel.context), costs_(scenario_) {
  model::check_model_config(s.model);
  build_context_parallel_step(s);  // validates the split, the nodes and the batch (InputError)
  optim::lr_schedule_from(s.training).validate();
  world_ = std::make_unique<comm::InProcessWorld>(P_);
  logs_.resize(size_t(P_));
  for (int r = 0; r < P_; ++r)
    ranks_.push_back(std::make_unique<ContextRank>(scenario_, r, compress::make_kv_codec(scenario_), *k_, timing,
                                                   logs_[size_t(r)]));
  param_count_ = ranks_[0]->model().param_count();
  codec_name_ = ranks_[0]->codec().describe();
}

ContextTrainer::ContextTrainer(const Scenario& s, ComputeTiming timing, comm::Communicator& comm)
    : scenario_(s), k_(&backend_for(s.training)), P_(s.parallel.context), costs_(scenario_), external_(&comm) {
  model::check_model_config(s.model);
  build_context_parallel_step(s);
  optim::lr_schedule_from(s.training).validate();
  if (comm.size() != P_)
    throw InputError("parallel.context", std::to_string(P_) + " context-parallel ranks, but " +
                                             std::to_string(comm.size()) + " processes (mpirun -np " +
                                             std::to_string(P_) + ")");
  logs_.resize(1);
  ranks_.push_back(
      std::make_unique<ContextRank>(scenario_, comm.rank(), compress::make_kv_codec(scenario_), *k_, timing, logs_[0]));
  param_count_ = ranks_[0]->model().param_count();
  codec_name_ = ranks_[0]->codec().describe();
}

ContextRank* ContextTrainer::local_rank(int rank) const {
  if (!external_) return rank >= 0 && rank < P_ ? ranks_[size_t(rank)].get() : nullptr;
  return rank == external_->rank() ? ranks_[0].get() : nullptr;
}

void ContextTrainer::on_ranks(const std::function<void(ContextRank&, comm::Communicator&)>& fn) {
  if (external_) return fn(*ranks_[0], *external_);
  const int threads = omp_get_max_threads();  // a new thread starts from OpenMP's default
  world_->run([&](comm::Communicator& comm) {
    omp_set_num_threads(threads);
    fn(*ranks_[size_t(comm.rank())], comm);
  });
}

float ContextTrainer::forward_backward(const int32_t* inputs, const int32_t* targets, int sequences) {
  std::vector<float> loss(static_cast<size_t>(P_));
  on_ranks([&](ContextRank& r, comm::Communicator& comm) {
    loss[size_t(r.rank())] = r.forward_backward(comm, inputs, targets, sequences, /*sync_gradients=*/false);
  });
  return loss[size_t(ranks_[0]->rank())];
}

void ContextTrainer::all_reduce_gradients() {
  if (P_ < 2) return;
  on_ranks([&](ContextRank& r, comm::Communicator& comm) {
    model::Model& m = r.model();
    for (const GradBucket& b : gradient_buckets(m.layout())) r.sync().all_reduce_bucket(comm, m, b);
  });
}

float ContextTrainer::evaluate(const int32_t* inputs, const int32_t* targets, int sequences) {
  std::vector<float> loss(static_cast<size_t>(P_));
  on_ranks([&](ContextRank& r, comm::Communicator& comm) {
    loss[size_t(r.rank())] = r.evaluate(comm, inputs, targets, sequences);
  });
  return loss[size_t(ranks_[0]->rank())];
}

StepRecord ContextTrainer::train_step(int step, const int32_t* inputs, const int32_t* targets, int sequences,
                                      bool record) {
  std::vector<RankStepResult> results(static_cast<size_t>(P_));
  for (auto& log : logs_) log.clear();
  on_ranks([&](ContextRank& r, comm::Communicator& comm) {
    comm::RecordingCommunicator recording(comm, logs_[external_ ? 0 : size_t(r.rank())]);
    results[size_t(r.rank())] = r.train_step(recording, step, inputs, targets, sequences);
  });
  StepRecord rec;
  rec.step = step;
  const RankStepResult& mine = results[size_t(ranks_[0]->rank())];  // rank 0 in-process
  rec.loss = mine.loss, rec.lr = mine.lr, rec.grad_norm = mine.grad_norm, rec.weight_sync = mine.weight_sync;
  rec.kv_reconstruction_error_k = mine.kv_reconstruction_error_k;
  rec.kv_reconstruction_error_v = mine.kv_reconstruction_error_v;
  double kernel = 0;
  for (auto& r : ranks_) kernel += r->take_kernel_wall_seconds();
  rec.kernel_wall_seconds = sum_over_processes(kernel);
  if (record) {
    const auto t0 = std::chrono::steady_clock::now();
    rec.graph = assemble_graph();
    rec.record_wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return rec;
}

double ContextTrainer::sum_over_processes(double x) const {
  if (external_) external_->all_reduce_sum(&x, 1, "bookkeeping");
  return x;
}

// Gathers one string per process onto every process (not recorded: bookkeeping).
static std::vector<std::string> all_gather_strings(comm::Communicator& comm, const std::string& mine) {
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

sim::StepGraph ContextTrainer::assemble_graph() {
  auto on_nodes = [&](const sim::StepGraph& g) {  // the ranks' graph on parallel.placement's nodes
    return scenario_.parallel.placement.empty() ? g : place_on_nodes(g, Layout(scenario_.parallel));
  };
  if (!external_) {
    std::vector<const comm::RankLog*> logs;
    for (const auto& log : logs_) logs.push_back(&log);
    return on_nodes(comm::assemble_step_graph(logs));
  }
  const std::vector<std::string> blobs = all_gather_strings(*external_, logs_[0].serialize());
  if (external_->rank() != 0) return sim::StepGraph(P_);
  std::vector<comm::RankLog> logs;
  for (const auto& b : blobs) logs.push_back(comm::RankLog::deserialize(b));
  std::vector<const comm::RankLog*> ptrs;
  for (const auto& log : logs) ptrs.push_back(&log);
  return on_nodes(comm::assemble_step_graph(ptrs));
}

std::vector<std::string> ContextTrainer::gather_rank_states() const {
  if (!external_) {
    std::vector<std::string> out;
    for (const auto& r : ranks_) out.push_back(rank_state(*r));
    return out;
  }
  return all_gather_strings(*external_, rank_state(*ranks_[0]));
}

}  // namespace lowband::parallel
