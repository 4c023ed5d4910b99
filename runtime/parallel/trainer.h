#pragma once
// What the run loop (runtime/train/run.cpp) needs of the trainer, whichever
// dimensions the layout parallelises (context ranks, pipeline stages, data
// replicas): make_trainer's LayoutTrainer (layout_trainer.h) trains them all.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "kernels/backend.h"
#include "runtime/parallel/compute_span.h"
#include "runtime/parallel/rank_program.h"
#include "runtime/parallel/rank_world.h"
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
  // Per layer, how far what an owner attended to of its K (V) block is from what
  // its receivers decoded (context/kv_agreement.h; 0 when they agree); empty unless
  // the owner attends to a reconstruction and the whole group is in this process.
  std::vector<double> kv_owner_receiver_error_k, kv_owner_receiver_error_v;
  sim::StepGraph graph;      // empty unless recording
  // An outer sync's exchange that runs beside later steps (data_sync.delay_steps)
  // puts the steps from its launch to its merge in one graph, a window:
  // window_open, this step's graph is part of one a later step closes (graph
  // empty here); the step that closes it has the whole window's graph
  // (graph.steps() steps, this one last; StepGraph::steps_part splits it).
  bool window_open = false;
  double kernel_wall_seconds = 0;  // wall time of the ranks' compute, summed
  // Wall time of the step's bookkeeping, which the step graph does not hold: the
  // kernel seconds (and replicas' losses) summed over the processes, the ranks'
  // logs gathered and the graph assembled. A real step is wall time minus this.
  double record_wall_seconds = 0;
};

// What the layout's codecs compress: the step graph's kinds of those messages
// ("kv", "dkv" for context parallelism; "act", "act_grad" for pipeline
// boundaries; all four for pipeline stages with context ranks), the codecs, and
// what the messages would carry uncompressed per step (all ranks' sends).
// `name` prefixes the run summary's keys.
struct CompressedTraffic {
  std::string name;  // "kv", "boundary" or "exchange" (both)
  std::vector<std::string> kinds;
  std::string codec;
  double uncompressed_bytes_per_step = 0;
  // The same per exchange: the K/V messages ("kv", "dkv"; context ranks > 1) and
  // the stage boundaries ("act", "act_grad"; stages > 1), and their codecs ("" where
  // the replica has no such exchange).
  double uncompressed_kv_bytes = 0, uncompressed_boundary_bytes = 0;
  std::string kv_codec, boundary_codec;
  double sent(const sim::StepGraph& graph) const;  // those kinds' bytes, all ranks
};

class Trainer {
 public:
  virtual ~Trainer() = default;
  virtual int ranks() const = 0;
  virtual CompressedTraffic compressed_traffic() const = 0;
  // A whole training step (step counts from 0) and, when `record`, its graph.
  virtual StepRecord train_step(int step, const int32_t* inputs, const int32_t* targets, int sequences,
                                bool record = true) = 0;
  // The graph of the window of steps still open (StepRecord::window_open), its
  // steps so far: a run that must time its steps now (a checkpoint, its end)
  // closes it early, as if the exchange in flight were waited for there. Empty
  // (0 ranks) when no window is open.
  virtual sim::StepGraph close_window() { return sim::StepGraph(0); }
  // Partial participation (parallel.data_sync.deadline_seconds, quorum;
  // sync/participation.h). Whether step `step` closes a round that need not
  // wait for every replica: train_step then takes the inner step alone, and the
  // run loop, having replayed the round's steps, says who made it in
  // close_round, which takes the outer step: a replica that did not is put back
  // to the round's start (weights, inner optimiser, codecs: its round is
  // undone) and takes the merged weights. The exchange is its own graph, every
  // rank starting it at once (the late ones gave up at the close).
  virtual bool closes_round(int step) const {
    (void)step;
    return false;
  }
  struct ClosedRound {
    sim::StepGraph graph;  // the exchange
    double kernel_wall_seconds = 0, record_wall_seconds = 0;
  };
  virtual ClosedRound close_round(int step, const std::vector<bool>& made_it);
  // The replica whose ranks each network node runs (a step graph's ranks are
  // nodes), -1 for a node that runs none.
  virtual std::vector<int> node_replicas() const { return {}; }
  // Mean loss over the valid targets, forward only (codecs still apply).
  virtual float evaluate(const int32_t* inputs, const int32_t* targets, int sequences) = 0;
  // Data-parallel replicas: each replica's loss in the last evaluate(), whose mean
  // it returned (replicas that compress boundaries hold a projected copy of the
  // weights, so theirs differ). Empty for one replica.
  virtual std::vector<double> last_eval_per_replica() const { return {}; }
  // Targets of the last evaluate() whose argmax was right (the first replica's),
  // or -1 where the trainer does not count them (pipelines).
  virtual int64_t last_eval_correct() const { return -1; }
  // Whether step `step` (from 0) synchronises the weights.
  virtual bool syncs_weights(int step) const = 0;
  // Whether this process writes the run's files (in-process, or MPI rank 0).
  virtual bool writer() const = 0;
  // Everything that decides the next steps, for checkpoints. load_state expects a
  // trainer built from the same scenario and throws binary::BinaryFormatError for
  // a state of another shape; after such an error the trainer must not be used.
  virtual void save_state(std::ostream& out) const = 0;
  virtual void load_state(std::istream& in) = 0;
};

// The record of a step whose ranks have run: `mine` (a local rank's result)
// stands for every rank's loss, lr, norm, weight sync and K/V errors; the step's
// books are closed on `world` (kernel seconds summed over the processes, the graph
// when `record`).
// keep_open: the step is part of a window that stays open (StepRecord::window_open).
StepRecord close_step_record(RankWorld& world, const Scenario& scenario, int step, const RankStepResult& mine,
                             double kernel_wall_seconds, bool record, bool keep_open = false);

// What one replica of `scenario` compresses (its codecs' message kinds), per step.
CompressedTraffic compressed_traffic_of(const Scenario& scenario);

// training.backend's kernels; InputError("training.backend") where they cannot run.
const kernels::Backend& training_backend(const TrainingConfig& training);

// The scenario's trainer (layout_trainer.h): its replicas of context ranks or
// pipeline stages (with context ranks inside), one replica or several. comm
// null: every rank in-process; else this process is comm's rank (MPI). Throws
// InputError for a layout it cannot train.
std::unique_ptr<Trainer> make_trainer(const Scenario& scenario, ComputeTiming timing, comm::Communicator* comm);

}  // namespace lowband::parallel
