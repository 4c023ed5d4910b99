#pragma once
// Context parallelism over P ranks running ContextRank (context_rank.h):
//  - in-process: P threads joined by a comm::InProcessWorld whose baton lets
//    one rank compute at a time (each rank's kernels get the whole machine, so
//    measured compute seconds mean what they say);
//  - or one rank per process on a given communicator (MPI: `mpirun -np P`), the
//    trainer of each process holding its own rank only.
// Every K/V block, every dK/dV partial and every reduction really moves between
// the ranks as a message; a step's graph is assembled from what the ranks did
// (comm::RecordingCommunicator and each rank's compute log; under MPI the logs
// are gathered, and the graph is assembled, on rank 0).
//
// The replicas, their optimisers and the attention run on training.backend's
// kernels (kernels/backend.h: the CPU, or every replica on one CUDA GPU); the
// K/V codecs and the transports work in host memory, so on a GPU what they see
// is staged.
#include <cstdint>
#include <functional>
#include <string>
#include <iosfwd>
#include <memory>
#include <vector>

#include "runtime/parallel/context_rank.h"
#include "runtime/parallel/rank_world.h"
#include "runtime/parallel/trainer.h"
#include "runtime/scenario/scenario.h"
#include "sim/step_graph.h"

namespace lowband::parallel {

class ContextTrainer final : public Trainer {
 public:
  // Throws InputError (scenario keys) for shapes context parallelism cannot split,
  // and InputError("training.backend") for "cuda" where no GPU can be used. Each
  // rank gets its own codec from compress::make_kv_codec(scenario).
  explicit ContextTrainer(const Scenario& scenario, ComputeTiming timing = ComputeTiming::measured);
  // One rank per process: this process's rank is comm's (comm.size() must be
  // parallel.context); every process makes the same calls in the same order.
  ContextTrainer(const Scenario& scenario, ComputeTiming timing, comm::Communicator& comm);

  int ranks() const override { return P_; }
  CompressedTraffic compressed_traffic() const override;
  // Whether this process holds rank `rank` (always, in-process).
  bool holds(int rank) const { return local_rank(rank) != nullptr; }
  // On a GPU backend its buffers are device memory (Model::params_to_host()).
  model::Model& replica(int rank) { return local_rank(rank)->model(); }
  const kernels::Backend& backend() const { return *k_; }
  const std::vector<TokenRange>& token_ranges(int rank) const { return costs_.ranges(rank); }

  // Forward and backward over the ranks; afterwards every replica's grads() hold
  // its own share, so their sum is the gradient of the global mean loss.
  float forward_backward(const int32_t* inputs, const int32_t* targets, int sequences);
  // Sums the replicas' gradients (the all-reduce's order) and gives every replica the sum.
  void all_reduce_gradients();
  StepRecord train_step(int step, const int32_t* inputs, const int32_t* targets, int sequences,
                        bool record = true) override;
  float evaluate(const int32_t* inputs, const int32_t* targets, int sequences) override;
  bool syncs_weights(int step) const override { return ranks_[0]->sync().syncs_at(step); }
  bool writer() const override { return world_.writer(); }

  // Everything that decides the next steps, for checkpoints (context_trainer_state.cpp):
  // every replica's parameters and AdamW state, every rank's codec state and the
  // codec's AdamW moments. A replica, optimiser or codec equal to rank 0's bit for
  // bit (as all-reduce keeps them) is written as a reference to it. load_state
  // expects a trainer built from the same scenario and throws
  // binary::BinaryFormatError for a state of another shape; after such an error
  // the trainer must not be used.
  void save_state(std::ostream& out) const override;
  void load_state(std::istream& in) override;

 private:
  ContextTrainer(const Scenario& scenario, ComputeTiming timing, comm::Communicator* comm);
  // Runs fn(rank, communicator) on every rank this process holds.
  void on_ranks(const std::function<void(ContextRank&, comm::Communicator&)>& fn, bool record = false);
  ContextRank* local_rank(int rank) const;
  std::string rank_state(const ContextRank& r) const;
  void load_state_v1(std::istream& in);

  Scenario scenario_;
  const kernels::Backend* k_;
  int P_;
  ContextCosts costs_;
  RankWorld world_;
  std::vector<std::unique_ptr<ContextRank>> ranks_;   // local ranks, in world_.local_ranks() order
  int64_t param_count_ = 0;
  std::string codec_name_;
};

}  // namespace lowband::parallel
