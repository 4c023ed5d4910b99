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

#include "comm/in_process.h"
#include "comm/recording.h"
#include "runtime/parallel/context_rank.h"
#include "runtime/scenario/scenario.h"
#include "sim/step_graph.h"

namespace lowband::parallel {

struct StepRecord {
  int step = 0;              // 0-based index of the step taken
  double loss = 0;           // mean over every valid target token of the batch
  double lr = 0;
  double grad_norm = 0;      // global norm before clipping (rank 0's)
  bool weight_sync = true;   // whether the weights were synchronised this step
  // Per layer, relative Frobenius error of what receivers saw of K and of V in this
  // step's training forward (KvCodec::reconstruction_errors); empty unless compressing.
  std::vector<double> kv_reconstruction_error_k, kv_reconstruction_error_v;
  sim::StepGraph graph;      // empty unless recording
  double kernel_wall_seconds = 0;  // wall time of the ranks' compute, summed
  double record_wall_seconds = 0;  // wall time spent assembling the graph
};

class ContextTrainer {
 public:
  // Throws InputError (scenario keys) for shapes context parallelism cannot split,
  // and InputError("training.backend") for "cuda" where no GPU can be used. Each
  // rank gets its own codec from compress::make_kv_codec(scenario).
  explicit ContextTrainer(const Scenario& scenario, ComputeTiming timing = ComputeTiming::measured);
  // One rank per process: this process's rank is comm's (comm.size() must be
  // parallel.context); every process makes the same calls in the same order.
  ContextTrainer(const Scenario& scenario, ComputeTiming timing, comm::Communicator& comm);

  int ranks() const { return P_; }
  // Whether this process holds rank `rank` (always, in-process).
  bool holds(int rank) const { return local_rank(rank) != nullptr; }
  // On a GPU backend its buffers are device memory (Model::params_to_host()).
  model::Model& replica(int rank) { return local_rank(rank)->model(); }
  const kernels::Backend& backend() const { return *k_; }
  const std::vector<TokenRange>& token_ranges(int rank) const { return costs_.ranges(rank); }

  // Forward and backward over the ranks; afterwards every replica's grads() hold
  // its own share, so their sum is the gradient of the global mean loss.
  float forward_backward(const int32_t* inputs, const int32_t* targets, int sequences);
  // Sums the replicas' gradients (rank order) and gives every replica the sum.
  void all_reduce_gradients();
  // A whole training step (step counts from 0) and, when `record`, its graph.
  StepRecord train_step(int step, const int32_t* inputs, const int32_t* targets, int sequences,
                        bool record = true);
  // Mean loss over the valid targets, forward only (the codec still applies).
  float evaluate(const int32_t* inputs, const int32_t* targets, int sequences);
  // Whether step `step` (from 0) synchronises the weights.
  bool syncs_weights(int step) const { return ranks_[0]->sync().syncs_at(step); }
  // Whether this process writes the run's files (in-process, or MPI rank 0).
  bool writer() const { return !external_ || external_->rank() == 0; }

  // Everything that decides the next steps, for checkpoints (context_trainer_state.cpp):
  // every replica's parameters and AdamW state, every rank's codec state and the
  // codec's AdamW moments. A replica, optimiser or codec equal to rank 0's bit for
  // bit (as all-reduce keeps them) is written as a reference to it. load_state
  // expects a trainer built from the same scenario and throws
  // binary::BinaryFormatError for a state of another shape; after such an error
  // the trainer must not be used.
  void save_state(std::ostream& out) const;
  void load_state(std::istream& in);

 private:
  // Runs fn(rank, communicator) on every rank this process holds (in-process:
  // all, on their threads, with the caller's OpenMP thread count).
  void on_ranks(const std::function<void(ContextRank&, comm::Communicator&)>& fn);
  ContextRank* local_rank(int rank) const;
  std::string rank_state(const ContextRank& r) const;
  std::vector<std::string> gather_rank_states() const;  // every rank's blob (MPI: gathered)
  void load_state_v1(std::istream& in);
  sim::StepGraph assemble_graph();  // MPI: gathers the logs; the graph on rank 0 only
  double sum_over_processes(double x) const;

  Scenario scenario_;
  const kernels::Backend* k_;
  int P_;
  ContextCosts costs_;
  comm::Communicator* external_ = nullptr;
  std::unique_ptr<comm::InProcessWorld> world_;       // in-process only
  std::vector<comm::RankLog> logs_;                   // per local rank
  std::vector<std::unique_ptr<ContextRank>> ranks_;   // local ranks
  int64_t param_count_ = 0;
  std::string codec_name_;
};

}  // namespace lowband::parallel
