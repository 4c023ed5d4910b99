#include "runtime/parallel/pipeline_trainer.h"

#include <utility>
#include <istream>
#include <ostream>
#include <sstream>
#include <string>

#include "common/binary_io.h"
#include "common/error.h"

namespace lowband::parallel {
namespace {

constexpr uint64_t kStateTag = 0x7069702d73746131ULL;  // "pip-sta1"

}  // namespace

PipelineTrainer::PipelineTrainer(const Scenario& s, ComputeTiming timing, comm::Communicator* comm)
    : scenario_(s), k_(&training_backend(s.training)), P_(s.parallel.pipeline), world_(P_, comm, "parallel.pipeline") {
  model::check_model_config(s.model);
  if (s.parallel.context > 1)
    throw InputError("parallel.context", "pipeline stages with context parallelism inside are not trained yet "
                                         "(lowband estimate models them)");
  if (s.parallel.data > 1) throw InputError("parallel.data", "data parallelism is not implemented yet");
  optim::lr_schedule_from(s.training).validate();
  for (int r : world_.local_ranks())
    stages_.push_back(std::make_unique<PipelineRank>(scenario_, r, *k_, timing, world_.log(r)));
}

CompressedTraffic PipelineTrainer::compressed_traffic() const {
  // Each of the P - 1 boundaries carries every microbatch's rows once each way.
  const ModelConfig& m = scenario_.model;
  const double dense = 2.0 * (P_ - 1) * double(scenario_.training.batch_size) * double(m.seq_len) * m.d_model *
                       m.bytes_per_element;
  return {"boundary", {"act", "act_grad"}, compress::make_boundary_codec(scenario_)->describe(), dense};
}

StepRecord PipelineTrainer::train_step(int step, const int32_t* inputs, const int32_t* targets, int sequences,
                                       bool record) {
  std::vector<RankStepResult> results(static_cast<size_t>(P_));
  world_.run([&](int s, comm::Communicator& comm) {
    results[size_t(s)] = stage(s).train_step(comm, step, inputs, targets, sequences);
  }, /*record=*/true);
  StepRecord rec;
  rec.step = step;
  const RankStepResult& mine = results[size_t(world_.local_ranks()[0])];  // every stage has the same
  rec.loss = mine.loss, rec.lr = mine.lr, rec.grad_norm = mine.grad_norm;
  double kernel = 0;
  for (auto& st : stages_) kernel += st->take_kernel_wall_seconds();
  RankWorld::StepBooks books = world_.close_step(scenario_, kernel, record);
  rec.kernel_wall_seconds = books.kernel_wall_seconds, rec.record_wall_seconds = books.record_wall_seconds;
  rec.graph = std::move(books.graph);
  return rec;
}

float PipelineTrainer::evaluate(const int32_t* inputs, const int32_t* targets, int sequences) {
  std::vector<float> loss(static_cast<size_t>(P_));
  world_.run([&](int s, comm::Communicator& comm) { loss[size_t(s)] = stage(s).evaluate(comm, inputs, targets, sequences); });
  return loss[size_t(world_.local_ranks()[0])];
}

void PipelineTrainer::save_state(std::ostream& out) const {
  const std::vector<std::string> blobs = world_.gather([&](int s) {
    const PipelineRank& r = *stages_[size_t(world_.local_index(s))];
    std::ostringstream one;
    const std::vector<float> p = r.model().params_to_host();
    binary::write_array(one, p.data(), uint64_t(p.size()));
    r.optimizer().save_state(one);
    return one.str();
  });
  binary::write_u64(out, kStateTag);
  binary::write_i64(out, P_);
  for (const std::string& b : blobs) binary::write_string(out, b);
}

void PipelineTrainer::load_state(std::istream& in) {
  if (binary::read_u64(in, "the trainer state") != kStateTag)
    throw binary::BinaryFormatError("no pipeline trainer state where one was expected");
  const int64_t stages = binary::read_i64(in, "the stage count");
  if (stages != P_)
    throw binary::BinaryFormatError("a state of " + std::to_string(stages) + " stages, the trainer has " +
                                    std::to_string(P_));
  for (int s = 0; s < P_; ++s) {
    const std::string blob = binary::read_string(in, "a stage's state");
    if (!holds(s)) continue;  // another process's stage (MPI)
    std::istringstream one(blob);
    model::Model& m = stage(s).model();
    std::vector<float> host(size_t(m.param_count()));
    binary::read_array_into(one, host.data(), uint64_t(host.size()), "a stage's parameters");
    k_->upload(m.params(), host.data(), host.size() * sizeof(float));
    stage(s).optimizer().load_state(one);
  }
}

}  // namespace lowband::parallel
