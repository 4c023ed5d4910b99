#include "runtime/parallel/pipeline_trainer.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/error.h"
#include "runtime/parallel/rank_state.h"

namespace lowband::parallel {
namespace {

constexpr uint64_t kStateTag = 0x7069702d73746131ULL;  // "pip-sta1"

}  // namespace

PipelineTrainer::PipelineTrainer(const Scenario& s, ComputeTiming timing, comm::Communicator* comm)
    : scenario_(s), k_(&training_backend(s.training)), P_(s.parallel.pipeline), C_(std::max(1, s.parallel.context)),
      world_(P_ * C_, comm, "parallel.pipeline") {
  model::check_model_config(s.model);
  if (s.parallel.data > 1) throw InputError("parallel.data", "data parallelism is not implemented yet");
  if (C_ > 1 && s.compression.weight_sync != WeightSync::all_reduce)
    throw InputError("compression.weight_sync", "pipeline stages with context parallelism sum their gradients "
                                                "(all_reduce); the other weight syncs are not implemented for them");
  optim::lr_schedule_from(s.training).validate();
  for (int r : world_.local_ranks())
    ranks_.push_back(std::make_unique<PipelineRank>(scenario_, r / C_, r % C_, *k_, timing, world_.log(r)));
}

CompressedTraffic PipelineTrainer::compressed_traffic() const { return compressed_traffic_of(scenario_); }

StepRecord PipelineTrainer::train_step(int step, const int32_t* inputs, const int32_t* targets, int sequences,
                                       bool record) {
  std::vector<RankStepResult> results(static_cast<size_t>(ranks()));
  world_.run([&](int r, comm::Communicator& comm) {
    results[size_t(r)] = rank(r).train_step(comm, step, inputs, targets, sequences);
  }, /*record=*/true);
  double kernel = 0;
  for (auto& r : ranks_) kernel += r->take_kernel_wall_seconds();
  return close_step_record(world_, scenario_, step, results[size_t(world_.local_ranks()[0])], kernel, record);  // every rank has the same
}

float PipelineTrainer::evaluate(const int32_t* inputs, const int32_t* targets, int sequences) {
  std::vector<float> loss(static_cast<size_t>(ranks()));
  world_.run([&](int r, comm::Communicator& comm) { loss[size_t(r)] = rank(r).evaluate(comm, inputs, targets, sequences); });
  return loss[size_t(world_.local_ranks()[0])];
}

void PipelineTrainer::save_state(std::ostream& out) const {
  save_rank_states(out, kStateTag, world_, [&](int r) -> RankProgram& { return *ranks_[size_t(world_.local_index(r))]; });
}

void PipelineTrainer::load_state(std::istream& in) {
  load_rank_states(in, kStateTag, "pipeline", world_, *k_, [&](int r) -> RankProgram& { return rank(r); });
}

}  // namespace lowband::parallel
