#pragma once
// One rank of context parallelism (SPMD): its model replica, its optimiser and
// its share of every sequence; it meets the other ranks only through a
// communicator. The layers run through ContextAttention (context/attention.h:
// the K/V exchange and its codec); around them the rank embeds its tokens, and
// computes the loss, for which one collective carries the loss sum ("loss": the
// global count of valid targets every rank counts itself); then the weight sync
// (sync/replica_sync.h) and AdamW.
//
// Several sequences in flight (parallel.microbatches = M): the step's sequences
// split into M slots, each with its own activations (gradients accumulate over
// them), and each layer's halves interleaved over the slots
// (ContextAttention::forward_layer_send/_finish): slot m's K/V cross the links
// while the other slots compute, so a layer's exchange can hide behind M − 1
// slots' compute. The numerics are the one-slot step's up to the order of sums.
//
// Every compute span is logged (comm::RankLog) with its measured seconds (a
// steady clock, after waiting for the GPU) or the device profile's
// (context/costs.h), under the step graph's tags: "embed", "lm_head", the same
// with "_bwd", "optimizer", and ContextAttention's per layer. With a
// comm::RecordingCommunicator the log then holds the whole step.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <numeric>
#include <vector>

#include "comm/communicator.h"
#include "comm/recording.h"
#include "kernels/backend_buffer.h"
#include "runtime/compress/kv_codec.h"
#include "runtime/model/model.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "runtime/parallel/compute_span.h"
#include "runtime/parallel/context/attention.h"
#include "runtime/parallel/context/costs.h"
#include "runtime/parallel/rank_program.h"
#include "runtime/scenario/scenario.h"
#include "runtime/sync/replica_sync.h"

namespace lowband::parallel {

class ContextRank final : public RankProgram {
 public:
  // rank: this rank's index in the context group (comm's rank when it runs).
  ContextRank(const Scenario& scenario, int rank, std::unique_ptr<compress::KvCodec> codec,
              const kernels::Backend& k, ComputeTiming timing, comm::RankLog& log);

  int rank() const { return rank_; }
  model::Model& model() override { return model_; }
  const model::Model& model() const override { return model_; }
  optim::AdamW& optimizer() override { return optimizer_; }
  const optim::AdamW& optimizer() const override { return optimizer_; }
  ContextAttention& attention() { return attention_; }
  const ContextAttention& attention() const { return attention_; }
  ContextAttention* context() override { return &attention_; }
  const ContextAttention* context() const override { return &attention_; }
  compress::KvCodec& codec() { return attention_.codec(); }
  const compress::KvCodec& codec() const { return attention_.codec(); }
  const sync::ReplicaSync& sync() const { return sync_; }
  sync::ReplicaSync& sync() { return sync_; }
  sync::ReplicaSync* replica_sync() override { return &sync_; }
  const sync::ReplicaSync* replica_sync() const override { return &sync_; }

  // inputs, targets: the whole batch (sequences, seq_len), row-major, targets < 0
  // ignored; the rank takes its own tokens. Afterwards grads() hold this rank's
  // share (dloss = valid_local / valid_global) unless sync_gradients, which sums
  // them over the ranks bucket by bucket as the backward goes (and over
  // data->group, valid_global then being data->valid_all). Returns the global
  // mean loss (with `data`, this replica's share of it).
  float forward_backward(comm::Communicator& comm, const int32_t* inputs, const int32_t* targets,
                         int sequences, bool sync_gradients, const SynchronousReplicas* data = nullptr);
  RankStepResult train_step(comm::Communicator& comm, int step, const int32_t* inputs, const int32_t* targets,
                            int sequences, const SynchronousReplicas* data = nullptr) override;
  float evaluate(comm::Communicator& comm, const int32_t* inputs, const int32_t* targets, int sequences) override;
  int64_t last_eval_correct() const override { return last_eval_correct_; }
  double take_kernel_wall_seconds() override { double s = kernel_wall_seconds_; kernel_wall_seconds_ = 0; return s; }

 private:
  void use_slot(int slot);
  // Gathers and embeds this rank's rows of the batch, slot by slot; returns the
  // slots used (parallel.microbatches, or one for an evaluation batch it does
  // not divide; training: InputError).
  int begin(const int32_t* inputs, const int32_t* targets, int sequences, bool training);
  void forward_layers(comm::Communicator& comm, int slots);
  // The head's forward and the loss sum's collective (deferred when training,
  // then the head's backward); finish_loss reads the sum once it has arrived
  // (training: after the step's join) and returns the global mean loss.
  void start_loss(comm::Communicator& comm, int slots, bool backward);
  float finish_loss(bool backward);
  int64_t valid_local() const { return std::accumulate(valid_local_.begin(), valid_local_.end(), int64_t{0}); }

  Scenario scenario_;
  Scenario slot_scenario_;  // one slot's share of the batch: its spans' costs
  int rank_, L_;
  double kernel_wall_seconds_ = 0;
  ContextCosts costs_;
  SpanSink spans_;
  sync::ReplicaSync sync_;
  model::Model model_;
  optim::AdamW optimizer_;
  optim::LrSchedule lr_;
  ContextAttention attention_;
  int64_t last_eval_correct_ = -1;  // of the last evaluate(), all ranks
  int64_t valid_global_ = 0;         // targets >= 0 in the whole batch
  std::vector<int64_t> valid_local_;  // per slot: targets >= 0 among this rank's rows
  std::vector<double> loss_sums_;     // start_loss's collective: the loss sum, then the codec's error sums
};

}  // namespace lowband::parallel
