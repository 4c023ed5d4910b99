#pragma once
// The trainer of every layout (make_trainer, trainer.h): R replicas (R = 1, or
// parallel.data, or parallel.replicas), each one a whole layout of its own —
// context ranks (ContextRank), or pipeline stages with context ranks inside
// (PipelineRank) — running its rank programs (rank_program.h) on its own ranks,
// in-process (one thread per rank, one computing at a time) or one rank per MPI
// process. World rank order: replica-major, then stage, then context rank
// (layout.h). Every K/V block, boundary and reduction really moves between the
// ranks as a message; a step's graph is assembled from what the ranks did.
//
// One replica (R = 1) runs the scenario as given on the whole world: no data
// group, no loss weighting, no outer sync — the arithmetic of the layout alone.
// With R > 1 each step's sequences are split evenly over the replicas (replica q
// takes the q-th block of batch_size / R), and parallel.data_sync says how the
// replicas' weights meet:
//  - all_reduce: synchronous data parallelism (replicas of one shape). Every
//    rank weights its loss by its share of all replicas' valid targets and sums
//    its gradients with the ranks holding the same part in the other replicas
//    (its data group, "grad_sync", bucket by bucket as the backward goes) before
//    the optimiser, so R replicas step as one replica on their whole batch would.
//  - diloco, sparseloco: each replica takes its own AdamW steps on its own mean
//    loss; every inner_steps steps the replicas' weights meet part by part in
//    the outer step (data/outer_step.h). The step's loss is the replicas'
//    losses weighted by their targets.
//
// Selective boundary compression (parallel.replicas[q].compress_boundaries):
// compression.boundary applies to the replicas that set it, the others send
// their boundaries dense. With subspace boundaries the outer step keeps every
// replica in one function family (data/outer_step.h, design.md §3c); with
// embedding_residual boundaries every replica holds one model, and a
// compressing replica's stages take a new snapshot of its embedding after each
// outer step (PipelineRank::snapshot_embedding).
//
// The models, optimisers and attention run on training.backend's kernels
// (kernels/backend.h); codecs and transports work in host memory.
//
// Run dry (LayoutTrainer(scenario, Dry{}); `estimate`, dry_steps.h) the same
// trainer composes the same ranks on the dry kernels (kernels::Device::dry:
// shapes only, nothing of the model's size allocated), with their codecs and
// outer syncs in their dry modes, profile timing, and a RankWorld that runs the
// ranks in turn over null transports under the recording communicator: a step
// records the graph a real step of the scenario records, task for task.
//
// Checkpoint state: one format for every layout (rank_state.h).
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "runtime/parallel/data/outer_step.h"
#include "runtime/parallel/data/parts.h"
#include "runtime/parallel/layout.h"
#include "runtime/parallel/pipeline/rank.h"
#include "runtime/parallel/rank_program.h"
#include "runtime/parallel/rank_world.h"
#include "runtime/parallel/trainer.h"

namespace lowband::parallel {

class LayoutTrainer final : public Trainer {
 public:
  // InputError naming the key for a layout it cannot train (shapes context
  // parallelism cannot split, a weight sync other than all_reduce without
  // context ranks; replicas of different shapes or compression
  // under all_reduce, context degrees that differ, a batch the replicas cannot
  // share, a sparse weight sync across replicas), InputError("training.backend")
  // where its kernels cannot run. comm null: every rank in-process; else this
  // process is comm's rank (comm.size() must be the layout's ranks).
  LayoutTrainer(const Scenario& scenario, ComputeTiming timing = ComputeTiming::measured,
                comm::Communicator* comm = nullptr);
  // The trainer run dry (above): its steps' losses mean nothing, their graphs
  // everything; checkpoints and evaluation are not for it.
  struct Dry {};
  LayoutTrainer(const Scenario& scenario, Dry);
  ~LayoutTrainer() override;
  bool dry() const { return k_->device == kernels::Device::dry; }

  int ranks() const override { return layout_.ranks(); }
  int replicas() const { return R_; }
  CompressedTraffic compressed_traffic() const override;
  // Whether this process holds rank `rank` (always, in-process).
  bool holds(int rank) const { return world_.local_index(rank) >= 0; }
  // A local rank's program, and its model (on a GPU backend its buffers are
  // device memory: Model::params_to_host()).
  RankProgram& rank(int r) { return *ranks_[size_t(world_.local_index(r))]; }
  model::Model& model(int r) { return rank(r).model(); }
  const kernels::Backend& backend() const { return *k_; }
  const Layout& layout() const { return layout_; }
  // The parts the outer sync synchronises (diloco, sparseloco; else empty).
  const std::vector<ModelPart>& parts() const;
  // The scenario one replica runs: one replica, its ranks on its own nodes, its
  // stages (parallel.stage_layers where it has that many stages, else an even
  // split), its boundaries dense unless it compresses them.
  Scenario replica_scenario(int replica) const;
  // fn on every local rank with its replica's communicator, outside a step (tests
  // look into a step's parts with it).
  void on_ranks(const std::function<void(int rank, RankProgram&, comm::Communicator& replica)>& fn);

  StepRecord train_step(int step, const int32_t* inputs, const int32_t* targets, int sequences,
                        bool record = true) override;
  // Every replica evaluates the whole batch; the mean of their losses.
  float evaluate(const int32_t* inputs, const int32_t* targets, int sequences) override;
  int64_t last_eval_correct() const override;
  std::vector<double> last_eval_per_replica() const override { return eval_per_replica_; }
  bool syncs_weights(int step) const override;
  sim::StepGraph close_window() override { return world_.close_window(scenario_); }
  bool closes_round(int step) const override;
  ClosedRound close_round(int step, const std::vector<bool>& made_it) override;
  std::vector<int> node_replicas() const override;
  bool writer() const override { return world_.writer(); }
  void save_state(std::ostream& out) const override;
  void load_state(std::istream& in) override;

 private:
  LayoutTrainer(const Scenario& scenario, ComputeTiming timing, const kernels::Backend& k, RankWorld world);
  bool local_steps() const;  // diloco / sparseloco: replicas step alone between outer steps
  void check_layout() const;
  // fn(rank, world, replica) on every local rank; with one replica `replica` is `world`.
  void run_ranks(const std::function<void(int, comm::Communicator&, comm::Communicator&)>& fn, bool record);
  int index_in_replica(int rank) const { return rank - first_rank_[size_t(layout_.place(rank).replica)]; }
  // color_of(w) for every world rank w: a split every rank can make without
  // exchanging colors (Communicator::split_known: MPI keeps the group).
  template <class F> std::vector<int> colors(F color_of) const {
    std::vector<int> out;
    for (int w = 0; w < layout_.ranks(); ++w) out.push_back(color_of(w));
    return out;
  }

  Scenario scenario_;
  ComputeTiming timing_;
  const kernels::Backend* k_;
  Layout layout_;
  int R_;
  std::vector<ReplicaConfig> shapes_;  // per replica
  std::vector<int> first_rank_;        // per replica
  RankWorld world_;
  std::vector<std::unique_ptr<RankProgram>> ranks_;  // local ranks, in world_.local_ranks() order
  std::unique_ptr<OuterStep> outer_;  // diloco / sparseloco: replicas step alone between outer steps
  bool exchange_in_window_ = false;   // the open window's logs hold a background exchange not merged
  std::vector<double> eval_per_replica_;  // of the last evaluate(); empty for one replica
  std::string codecs_;  // compressed_traffic().codec, which a checkpoint must match
  // Partial participation: each local rank's state as its round began (rank_snapshot).
  std::vector<std::string> round_start_;
  bool partial() const { return local_steps() && !dry() && scenario_.parallel.data_sync.partial_participation(); }
};

}  // namespace lowband::parallel
