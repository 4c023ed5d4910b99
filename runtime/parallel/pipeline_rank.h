#pragma once
// One stage of pipeline parallelism (SPMD): the stage's layers (model::StageSpan:
// the embedding on the first stage, the LM head on the last), its AdamW and its
// boundary codec; it meets the other stages only through a communicator whose
// rank s is stage s.
//
// A step splits the batch into parallel.microbatches and runs the stage's
// forwards and backwards in the order of parallel.schedule (pipeline_schedule.h):
//   F(m): receive microbatch m's residual stream from stage s−1 ("act", decoded
//         by the boundary codec), run the stage's layers (the loss on the last
//         stage), encode and send the output to stage s+1;
//   B(m): receive ∂L/∂x from stage s+1 ("act_grad"), back-propagate through the
//         stage (gradients accumulate over microbatches), send ∂L/∂x_in back.
// Then one all-reduce of 2 doubles over the stages ("loss"): the loss sum (only
// the last stage's is non-zero) and each stage's squared gradient norm, so that
// every stage clips by the whole model's norm, as one device would; then AdamW
// ("optimizer"). Each microbatch's loss is weighted by its share of the batch's
// valid targets, so the gradients are those of the batch's mean loss.
//
// compression.boundary = subspace: every stage before the last keeps its layers'
// wo and w_down, and the first stage its learnable embedding, in span(U)
// (SubspaceConstraint: gradients projected before the norm, weights after the
// update), and the first stage adds the frozen table E_fixed to the embedding.
//
// Compute spans are logged (comm::RankLog) under "stage_fwd", "stage_bwd" and
// "optimizer": measured seconds, or the device profile's (pipeline_costs.h).
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "comm/communicator.h"
#include "comm/recording.h"
#include "runtime/compress/boundary_codec.h"
#include "runtime/compress/subspace_constraint.h"
#include "runtime/model/model.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "runtime/parallel/context_rank.h"
#include "runtime/parallel/pipeline_costs.h"
#include "runtime/scenario/scenario.h"

namespace lowband::parallel {

// The model options of `stage` of scenario's pipeline (its span; E_fixed on the
// first stage with subspace boundaries: `fixed` keeps that table alive).
model::ModelOptions stage_model_options(const Scenario& scenario, int stage, kernels::Device device,
                                        std::vector<float>& fixed);

// Projects what the subspace constraint keeps in span(U) in `model` (a stage's or
// the whole model's): wo and w_down of every layer before the last stage's first
// layer, and the embedding. `grads`: the gradients, else the parameters. A no-op
// unless compression.boundary is subspace.
class BoundaryConstraint {
 public:
  BoundaryConstraint(const Scenario& scenario, const kernels::Backend& k);
  bool active() const { return basis_.has_value(); }
  void project(model::Model& model, bool grads);

 private:
  int constrained_end_ = 0;  // layers [0, constrained_end_) are constrained
  std::optional<compress::SubspaceConstraint> basis_;
};

class PipelineRank {
 public:
  PipelineRank(const Scenario& scenario, int stage, const kernels::Backend& k, ComputeTiming timing,
               comm::RankLog& log);

  int stage() const { return stage_; }
  model::Model& model() { return model_; }
  const model::Model& model() const { return model_; }
  optim::AdamW& optimizer() { return optimizer_; }
  const optim::AdamW& optimizer() const { return optimizer_; }

  // inputs, targets: the whole batch (sequences, seq_len), row-major (every stage
  // has it: the first needs the inputs, the last the targets, the codec the
  // token ids). comm: the pipeline group (rank = stage). Returns the batch's mean
  // loss and the global gradient norm on every stage.
  RankStepResult train_step(comm::Communicator& comm, int step, const int32_t* inputs, const int32_t* targets,
                            int sequences);
  // Mean loss over the valid targets, forward only (the boundary codec applies).
  float evaluate(comm::Communicator& comm, const int32_t* inputs, const int32_t* targets, int sequences);
  double take_kernel_wall_seconds() { double s = kernel_wall_seconds_; kernel_wall_seconds_ = 0; return s; }

 private:
  class Span;
  struct Microbatch {
    const int32_t* inputs;
    const int32_t* targets;
    int sequences;
    int64_t rows;
    int64_t valid;  // targets >= 0
  };
  std::vector<Microbatch> split(const int32_t* inputs, const int32_t* targets, int sequences) const;
  // Both return the microbatch's loss sum (mean · valid) on the last stage, else 0.
  double forward(comm::Communicator& comm, int m, const Microbatch& mb, int slot);
  void backward(comm::Communicator& comm, int m, const Microbatch& mb, int slot, int64_t valid_total);
  // fill(p) writes `count` floats at a host pointer p; they land at device_ptr
  // (directly on the CPU, staged through the host on a GPU).
  template <class Fill> void write_from_host(float* device_ptr, size_t count, Fill fill);

  Scenario scenario_;
  int stage_, P_, M_;
  const kernels::Backend& k_;
  ComputeTiming timing_;
  comm::RankLog& log_;
  PipelineCosts costs_;
  std::vector<float> fixed_embedding_;
  model::Model model_;
  optim::AdamW optimizer_;
  optim::LrSchedule lr_;
  std::unique_ptr<compress::BoundaryCodec> codec_;
  BoundaryConstraint constraint_;
  std::vector<model::LocalAttention> attention_;      // per slot: its own saved lse
  std::vector<compress::CodecMessage> boundary_;      // per slot: the forward message sent or received
  std::vector<float> host_;  // staging for the codec on a GPU backend
  double kernel_wall_seconds_ = 0;
};

}  // namespace lowband::parallel
