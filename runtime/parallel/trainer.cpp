#include "runtime/parallel/trainer.h"

#include <stdexcept>
#include <string>

#include "common/error.h"
#include "runtime/parallel/context_trainer.h"
#include "runtime/parallel/pipeline_trainer.h"

namespace lowband::parallel {

const kernels::Backend& training_backend(const TrainingConfig& t) {
  try {
    return kernels::backend(t.backend == "cuda" ? kernels::Device::cuda : kernels::Device::cpu);
  } catch (const std::runtime_error& e) {
    throw InputError("training.backend", std::string("\"") + t.backend + "\": " + e.what());
  }
}

double CompressedTraffic::sent(const sim::StepGraph& graph) const {
  double bytes = 0;
  for (int r = 0; r < graph.ranks(); ++r)
    for (const std::string& kind : kinds) bytes += graph.bytes_sent(r, kind);
  return bytes;
}

std::unique_ptr<Trainer> make_trainer(const Scenario& scenario, ComputeTiming timing, comm::Communicator* comm) {
  if (scenario.parallel.pipeline > 1) return std::make_unique<PipelineTrainer>(scenario, timing, comm);
  if (comm) return std::make_unique<ContextTrainer>(scenario, timing, *comm);
  return std::make_unique<ContextTrainer>(scenario, timing);
}

}  // namespace lowband::parallel
