#pragma once
// What every rank's program offers its trainer, whichever dimensions it spans:
// a context-parallel rank (context/rank.h) or a pipeline stage's rank
// (pipeline/rank.h). The trainer (layout_trainer.h) runs one per
// rank of each replica and synchronises the replicas through SynchronousReplicas.
#include <cstdint>
#include <iosfwd>
#include <vector>

#include "comm/communicator.h"
#include "runtime/model/model.h"
#include "runtime/optim/optimizer.h"

namespace lowband::sync {
class ReplicaSync;
}

namespace lowband::parallel {

class ContextAttention;

struct RankStepResult {
  float loss = 0;        // mean over every valid target of the batch (all ranks); with a
                         // SynchronousReplicas, this replica's loss sum over SynchronousReplicas::valid_all
  double lr = 0;
  double grad_norm = 0;  // before clipping
  bool weight_sync = true;
  // Per layer, ‖Z − Ẑ‖_F / ‖Z‖_F of what receivers saw of K and of V this step,
  // summed over all ranks; empty unless compressing.
  std::vector<double> kv_reconstruction_error_k, kv_reconstruction_error_v;
};

// A replica's step inside synchronous data parallelism: every rank's loss is
// weighted by its share of all replicas' valid targets (valid_all), and its
// gradients are summed over `group` (the ranks holding the same part in every
// replica, "grad_sync", deferred bucket by bucket) before the optimiser, so that
// every replica steps on the whole batch's gradient.
struct SynchronousReplicas {
  comm::Communicator* group = nullptr;
  int64_t valid_all = 0;
};

class RankProgram {
 public:
  virtual ~RankProgram() = default;
  // inputs, targets: the replica's whole batch (sequences, seq_len), row-major;
  // comm: the replica's ranks. A step counts from 0.
  virtual RankStepResult train_step(comm::Communicator& comm, int step, const int32_t* inputs,
                                    const int32_t* targets, int sequences,
                                    const SynchronousReplicas* data = nullptr) = 0;
  // Mean loss over the valid targets, forward only (codecs apply).
  virtual float evaluate(comm::Communicator& comm, const int32_t* inputs, const int32_t* targets, int sequences) = 0;
  // Targets of the last evaluate() predicted right, summed over the ranks; -1: not counted.
  virtual int64_t last_eval_correct() const { return -1; }
  virtual model::Model& model() = 0;
  virtual const model::Model& model() const = 0;
  virtual optim::AdamW& optimizer() = 0;
  virtual const optim::AdamW& optimizer() const = 0;
  // The K/V exchange (its codec's state is checkpointed), or null.
  virtual ContextAttention* context() = 0;
  virtual const ContextAttention* context() const = 0;
  // The weight sync over the rank's context group (its state is checkpointed
  // where it keeps one; sparse syncs every sync_every steps), or null.
  virtual sync::ReplicaSync* replica_sync() = 0;
  virtual const sync::ReplicaSync* replica_sync() const = 0;
  // A pipeline stage's boundary codec that centres on the embedding
  // (compression.boundary embedding_residual) takes its snapshot from the first
  // stage; every rank of the replica (`comm`) calls it together. No-op elsewhere.
  virtual void snapshot_embedding(comm::Communicator& comm) { (void)comm; }
  // That snapshot, for checkpoints (nothing written where there is none).
  virtual void save_boundary_state(std::ostream& out) const { (void)out; }
  virtual void load_boundary_state(std::istream& in) { (void)in; }
  // Measured wall seconds of the rank's compute spans since the last call.
  virtual double take_kernel_wall_seconds() = 0;
};

}  // namespace lowband::parallel
