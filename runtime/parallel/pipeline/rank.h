#pragma once
// One rank of pipeline parallelism (SPMD): a stage's layers (model::StageSpan:
// the embedding on the first stage, the LM head on the last), its AdamW and its
// boundary codec, and with parallel.context = C > 1 its share of every sequence
// (ContextAttention: the stage's C ranks exchange K/V layer by layer). World rank
// s·C + c is stage s, context rank c; it meets the others only through the
// world communicator and two groups split from it: its pipeline (the stages of
// context rank c) and its context group (the C ranks of stage s).
//
// A step splits the batch into parallel.microbatches and runs the stage's
// forwards and backwards in the order of parallel.schedule (pipeline/schedule.h):
//   F(m): receive microbatch m's residual stream (this rank's rows of it) from
//         stage s−1 ("act", decoded by the boundary codec), run the stage's
//         layers (the loss on the last stage), encode and send the output to s+1;
//   B(m): receive ∂L/∂x from stage s+1 ("act_grad"), back-propagate through the
//         stage (gradients accumulate over microbatches), send ∂L/∂x_in back.
// With C > 1 the stage's context ranks then keep their weights together by
// compression.weight_sync (sync/replica_sync.h, over the context group, on the
// stage's own parameter layout): all_reduce sums the gradients ("grad_sync",
// bucket by bucket); the others act around the optimiser step as they do for a
// context-only replica. Then one all-reduce over the world ("loss"): the loss
// sum (only the last stage's is non-zero) and the squared gradient norm
// (context rank 0's of each stage; with sparse and sparse_update, whose ranks
// step on their own gradients, one per context rank: rank c clips by its
// pipeline's norm), so that every rank clips by the whole model's norm, as one
// device would; then AdamW ("optimizer"). Each rank's loss is weighted by its share of the batch's valid
// targets, so the gradients are those of the batch's mean loss. The K/V codec's
// collectives (warm-up Gram sums, parameter gradients, error sums) go over the
// world, so every rank holds the same whole-model codec.
//
// compression.boundary = subspace: every stage before the last keeps its layers'
// wo and w_down, and the first stage its learnable embedding, in span(U)
// (SubspaceConstraint: gradients projected before the norm, weights after the
// update), and the first stage adds the frozen table E_fixed to the embedding.
// embedding_residual: no constraint; the codecs centre on a snapshot of the
// first stage's embedding (snapshot_embedding), checkpointed with the rank.
//
// Compute spans are logged (comm::RankLog): with C = 1 one "stage_fwd" per
// forward and one "stage_bwd" per backward (pipeline/costs.h); with C > 1
// "stage_in" (begin, embedding or boundary decode), ContextAttention's per
// layer, "stage_out" (head and loss, or boundary encode), and in the backward
// "stage_out_bwd", the layers', "stage_in_bwd"; then "optimizer".
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
#include "runtime/parallel/context/attention.h"
#include "runtime/parallel/context/costs.h"
#include "runtime/parallel/pipeline/costs.h"
#include "runtime/parallel/rank_program.h"
#include "runtime/scenario/scenario.h"
#include "runtime/sync/replica_sync.h"

namespace lowband::parallel {

// The model options of `stage` of scenario's pipeline (its span; E_fixed on the
// first stage with subspace boundaries: `fixed` keeps that table alive).
model::ModelOptions stage_model_options(const Scenario& scenario, int stage, kernels::Device device,
                                        std::vector<float>& fixed);

// embedding_residual's table over a pipeline (root: its first stage): `table`
// (vocab × d_model floats; null in a dry run: the sizes only), Wire
// "embed_snapshot" at the model's wire precision (bytes_per_element).
void broadcast_embedding_table(comm::Communicator& pipeline, const ModelConfig& model, float* table);

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

class PipelineRank final : public RankProgram {
 public:
  // The communicators a step uses: the world, and the groups split from it
  // (with C = 1 the pipeline is the world and there is no context group).
  struct Groups {
    comm::Communicator& world;
    comm::Communicator& pipeline;
    comm::Communicator* context;
  };

  PipelineRank(const Scenario& scenario, int stage, int context_rank, const kernels::Backend& k,
               ComputeTiming timing, comm::RankLog& log);

  int stage() const { return stage_; }
  int context_rank() const { return c_; }
  model::Model& model() override { return model_; }
  const model::Model& model() const override { return model_; }
  optim::AdamW& optimizer() override { return optimizer_; }
  const optim::AdamW& optimizer() const override { return optimizer_; }
  ContextAttention* context() override { return context_.get(); }  // null unless C > 1
  const ContextAttention* context() const override { return context_.get(); }
  const compress::BoundaryCodec& boundary_codec() const { return *codec_; }
  sync::ReplicaSync* replica_sync() override { return context_ ? &sync_ : nullptr; }  // over the context group
  const sync::ReplicaSync* replica_sync() const override { return context_ ? &sync_ : nullptr; }

  // inputs, targets: the whole batch (sequences, seq_len), row-major (every rank
  // has it: the first stage needs the inputs, the last the targets, the codec the
  // token ids). world: every rank of the replica (rank s·C + c). Returns the
  // batch's mean loss and the global gradient norm on every rank. With `data`
  // (synchronous data parallelism) the loss is weighted by data->valid_all and
  // the stage's gradients are also summed over data->group before the norm.
  RankStepResult train_step(comm::Communicator& world, int step, const int32_t* inputs, const int32_t* targets,
                            int sequences, const SynchronousReplicas* data = nullptr) override;
  // The same over groups given, not split from the world (a dry run's: comm/null.h).
  RankStepResult train_step(const Groups& groups, int step, const int32_t* inputs, const int32_t* targets,
                            int sequences, const SynchronousReplicas* data = nullptr);
  float evaluate(comm::Communicator& world, const int32_t* inputs, const int32_t* targets, int sequences) override;
  // compression.boundary embedding_residual: every stage's codec centres on the
  // first stage's embedding as it is now (stage 0 broadcasts it over the
  // pipeline). LayoutTrainer calls it at the start and after each outer step.
  void snapshot_embedding(comm::Communicator& world) override;
  void save_boundary_state(std::ostream& out) const override;
  void load_boundary_state(std::istream& in) override;
  double take_kernel_wall_seconds() override { double s = kernel_wall_seconds_; kernel_wall_seconds_ = 0; return s; }

 private:
  struct Microbatch {
    const int32_t* inputs;
    const int32_t* targets;
    int sequences, first_sequence;
    int64_t valid;  // targets >= 0, all of the microbatch's rows
  };
  template <class F> auto with_groups(comm::Communicator& world, F f);
  std::vector<Microbatch> split(const int32_t* inputs, const int32_t* targets, int sequences) const;
  int64_t rows_of(const Microbatch& mb) const;  // this rank's rows of mb
  void prepare(int microbatches, int slots);     // per-step bookkeeping sized
  // Microbatch m through the stage. forward returns this rank's loss sum (mean ·
  // valid rows) on the last stage, else 0.
  double forward(const Groups& g, int m, const Microbatch& mb, int slot);
  void backward(const Groups& g, int m, const Microbatch& mb, int slot, int64_t valid_total);
  // The model begun on this rank's rows of mb in `slot` (local_valid_[m] set),
  // the previous stage's residual decoded into it when `received`.
  void begin_microbatch(int m, const Microbatch& mb, int slot, const compress::CodecMessage* received);
  // After the stage's layers: the loss sum on the last stage, else the output
  // encoded into `boundary` and packed.
  double end_microbatch(int m, int64_t n, compress::CodecMessage& boundary, std::vector<uint8_t>& packed);
  // fill(p) writes `count` floats at a host pointer p; they land at device_ptr
  // (directly on the CPU, staged through the host on a GPU).
  template <class Fill> void write_from_host(float* device_ptr, size_t count, Fill fill);

  Scenario scenario_;
  int stage_, c_, stages_, context_ranks_, M_;
  const kernels::Backend& k_;
  double kernel_wall_seconds_ = 0;
  PipelineCosts costs_;  // with C > 1 also each microbatch's context costs
  SpanSink spans_;
  std::vector<float> fixed_embedding_;
  model::Model model_;
  optim::AdamW optimizer_;
  optim::LrSchedule lr_;
  std::unique_ptr<compress::BoundaryCodec> codec_;
  BoundaryConstraint constraint_;
  sync::ReplicaSync sync_;
  std::unique_ptr<ContextAttention> context_;          // C > 1
  std::vector<model::LocalAttention> attention_;       // C = 1, per slot: its own saved lse
  std::vector<compress::CodecMessage> boundary_;       // per slot: the forward message sent or received
  std::vector<int64_t> local_valid_;                   // per microbatch: valid targets among this rank's rows
  const int32_t* tokens_ = nullptr;                    // this rank's token ids of the current microbatch
  std::vector<float> host_;  // staging for the codec on a GPU backend
};

}  // namespace lowband::parallel
