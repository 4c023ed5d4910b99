#include "runtime/parallel/context_trainer.h"

#include <utility>

#include "common/error.h"
#include "runtime/compress/make_codec.h"
#include "runtime/parallel/context_schedule.h"
#include "runtime/parallel/layout.h"

namespace lowband::parallel {
ContextTrainer::ContextTrainer(const Scenario& s, ComputeTiming timing) : ContextTrainer(s, timing, nullptr) {}

ContextTrainer::ContextTrainer(const Scenario& s, ComputeTiming timing, comm::Communicator& comm)
    : ContextTrainer(s, timing, &comm) {}

ContextTrainer::ContextTrainer(const Scenario& s, ComputeTiming timing, comm::Communicator* comm)
    : scenario_(s), k_(&training_backend(s.training)), P_(s.parallel.context), costs_(scenario_),
      world_(P_, comm, "parallel.context") {
  model::check_model_config(s.model);
  check_context_parallel(s);  // the split, the nodes and the batch (InputError)
  optim::lr_schedule_from(s.training).validate();
  for (int r : world_.local_ranks())
    ranks_.push_back(
        std::make_unique<ContextRank>(scenario_, r, compress::make_kv_codec(scenario_), *k_, timing, world_.log(r)));
  param_count_ = ranks_[0]->model().param_count();
  codec_name_ = ranks_[0]->codec().describe();
}

CompressedTraffic ContextTrainer::compressed_traffic() const { return compressed_traffic_of(scenario_); }

ContextRank* ContextTrainer::local_rank(int rank) const {
  const int i = world_.local_index(rank);
  return i < 0 ? nullptr : ranks_[size_t(i)].get();
}

void ContextTrainer::on_ranks(const std::function<void(ContextRank&, comm::Communicator&)>& fn, bool record) {
  world_.run([&](int rank, comm::Communicator& comm) { fn(*local_rank(rank), comm); }, record);
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
  on_ranks([&](ContextRank& r, comm::Communicator& comm) {
    results[size_t(r.rank())] = r.train_step(comm, step, inputs, targets, sequences);
  }, /*record=*/true);
  double kernel = 0;
  for (auto& r : ranks_) kernel += r->take_kernel_wall_seconds();
  return close_step_record(world_, scenario_, step, results[size_t(ranks_[0]->rank())], kernel, record);  // rank 0 in-process
}

}  // namespace lowband::parallel
