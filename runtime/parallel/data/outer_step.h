#pragma once
// The outer step of replicas that train on their own between syncs
// (parallel.data_sync diloco, sparseloco): what LayoutTrainer composes beside
// the replicas' rank programs, for the ranks this process holds.
//
// The replicas' weights meet part by part (parts.h: the common refinement of
// every replica's stages, so replicas may differ in their pipelines): for each
// part it holds a rank keeps one sync::OuterSync, over the ranks holding that
// part with the same context index in every replica ("pseudo_grad"; a rank's
// parts' collectives in flight together). The inner AdamW state stays per replica.
//
// Subspace-compressed boundaries. A replica that compresses its pipeline
// boundaries with the subspace method keeps wo and w_down of its layers before
// its last stage, and its learnable embedding E, in span(U), and adds the frozen
// E_fixed to E; a replica that does not compress has neither. So that all
// replicas train one function family:
//  - every replica starts from the same constrained model (start_constrained):
//    the union of the compressing replicas' constrained tensors projected once
//    (the same kernel calls on the same bytes, so the copies agree bit for bit),
//    and E_fixed folded into the non-compressing replicas' learnable embedding;
//  - the outer sync works on the effective embedding E + E_fixed (a compressing
//    first stage adds E_fixed on the host before, and takes it off after);
//  - after the outer step a compressing replica projects its constrained
//    tensors back into span(U) (the average of unconstrained replicas leaves it;
//    without this its boundaries would no longer rebuild exactly) and restarts
//    its pseudo-gradient from the projected weights (OuterSync::rebase), so its
//    next Δ is its inner steps' alone, inside span(U).
// With embedding_residual boundaries nothing is constrained: the trainer has a
// compressing replica's stages take a new snapshot of the embedding after the
// outer step.
//
// Outer syncs beside the inner steps (data_sync.delay_steps τ > 0;
// sync/sync_period.h): after step t each rank stages its parts' messages (Δ of
// the weights the round ended with); as step t + 1 begins it launches their
// collectives in the background (launch_staged), so that in the recorded graph
// they run beside the inner steps; after step t + τ it merges them. Real
// transports complete the collective at the launch: only the recorded graph,
// and so the replayed clock, has it in flight.
//
// Partial participation (data_sync.deadline_seconds, quorum; τ = 0): run() is
// given which replicas made the round (the run loop asked the replay: train/run.cpp);
// those that did exchange among themselves (part_groups over them), the first
// of them sends the late ones the result (result_groups), and every replica
// merges it alike.
//
// Run dry (kernels::Device::dry) nothing is constrained and the outer syncs are
// dry ones: each outer step makes its collectives of their sizes.
#include <functional>
#include <iosfwd>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/recording.h"
#include "runtime/parallel/compute_span.h"
#include "runtime/parallel/data/parts.h"
#include "runtime/parallel/layout.h"
#include "runtime/parallel/pipeline/rank.h"
#include "runtime/parallel/rank_program.h"
#include "runtime/scenario/scenario.h"
#include "runtime/sync/outer_sync.h"

namespace lowband::parallel {

class OuterStep {
 public:
  // A local rank's program, by world rank.
  using Programs = std::function<RankProgram&(int rank)>;

  // The local ranks' (`local_ranks`) outer syncs, from their weights as they are
  // now; with subspace boundaries, first every replica from the same
  // constrained model.
  OuterStep(const Scenario& scenario, const Layout& layout, const kernels::Backend& k, ComputeTiming timing,
            const std::vector<int>& local_ranks, const Programs& programs);
  ~OuterStep();

  // The parts the outer sync synchronises.
  const std::vector<ModelPart>& parts() const { return parts_; }

  // Whether step `step` (from 0) issues an exchange or merges one (of
  // `fragment`; -1: of any).
  bool acts_at(int step) const;
  bool merges_at(int step, int fragment = -1) const;
  // Local rank `rank`'s outer step: every rank of `world` calls it together after
  // inner step `step` where acts_at(step). Its compute spans ("outer_sync") go to
  // `log`: measured, or the device profile's seconds. With τ > 0 it stages the
  // messages where the step issues, merges where it merges (the merge of the
  // exchange launched τ steps before), and launches nothing. made_it (partial
  // participation, τ = 0): per replica, whether it made the round (empty: all).
  void run(int rank, int step, comm::Communicator& world, comm::RankLog& log, const std::vector<bool>& made_it = {});
  // As step `step` begins (every rank of `world` together): the background
  // launch of the messages run() staged after the step before. Whether the rank
  // had any.
  bool launch_staged(int rank, int step, comm::Communicator& world, comm::RankLog& log);
  // The outer steps' compute wall seconds since the last call.
  double take_wall_seconds();

  // The rank's outer syncs' state (checkpoints), in part order.
  void save_state(int rank, std::ostream& out) const;
  void load_state(int rank, std::istream& in);

 private:
  struct Holding {  // one part a local rank holds, and its outer sync
    int part = 0;
    int fragment = 0;  // parallel.data_sync.fragments: which one the part lies in
    int64_t offset = 0;  // in the rank's flat buffer
    std::unique_ptr<sync::OuterSync> sync;
    double stage_wall_seconds = 0;  // the staging's, logged with the launch
  };
  struct Constrained {  // a rank of a replica with subspace boundaries
    BoundaryConstraint constraint;
    std::vector<float> fixed;  // E_fixed where the rank holds the embedding, else empty
  };
  bool dry() const { return k_->device == kernels::Device::dry; }
  int local_index(int rank) const;
  void start_constrained();
  // The rank's parameters on the host as the outer sync sees them (E_fixed added
  // to a compressing first stage's embedding); empty in a dry run.
  std::vector<float> sync_view(int rank) const;
  // One group per (part, context rank) of `world`; with made_it (partial
  // participation, per replica), of the replicas that made the round.
  std::vector<std::unique_ptr<comm::Communicator>> part_groups(comm::Communicator& world,
                                                               const std::vector<bool>& made_it = {}) const;
  // Partial participation: per part and context rank, the first holder that
  // made the round (group rank *root) and the holders that did not; null where
  // the rank is in none.
  std::vector<std::unique_ptr<comm::Communicator>> result_groups(comm::Communicator& world,
                                                                 const std::vector<bool>& made_it,
                                                                 std::vector<int>& roots) const;
  // τ = H: after step `step`, which issues `fragment`'s exchange, the merge of
  // nothing arrived yet (the first round: OuterSync::finish_first_round).
  bool first_round(const sync::OuterSync& sync, int fragment, int step) const;
  // An "outer_sync" compute span of `rank`: measured seconds, or `cost` on its node's profile.
  void span(int rank, comm::RankLog& log, const cost::Cost& cost, double wall_seconds);
  // After the merge: the part's weights back on the device, constrained again.
  void put_back(int rank, std::vector<float>& host);

  Scenario scenario_;
  const Layout& layout_;
  const kernels::Backend* k_;
  ComputeTiming timing_;
  std::vector<int> local_ranks_;
  Programs programs_;
  std::vector<ModelPart> parts_;
  std::vector<std::vector<Holding>> holdings_;             // per local rank, in part order
  std::vector<std::unique_ptr<Constrained>> constrained_;  // per local rank; null unless it compresses (subspace)
  double wall_seconds_ = 0;
};

}  // namespace lowband::parallel
