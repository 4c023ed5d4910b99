#pragma once
// Pipeline parallelism over P stages running PipelineRank (pipeline_rank.h):
// in-process (P threads, one computing at a time) or one stage per process on a
// given communicator (MPI: `mpirun -np P`). Every boundary message really moves
// between the stages; a step's graph is assembled from what they did.
//
// Checkpoint state ("pip-sta1"): per stage its parameters and AdamW state.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <vector>

#include "runtime/parallel/pipeline_rank.h"
#include "runtime/parallel/rank_world.h"
#include "runtime/parallel/trainer.h"

namespace lowband::parallel {

class PipelineTrainer final : public Trainer {
 public:
  // Throws InputError naming the key for a layout it cannot train
  // (parallel.context or parallel.data > 1 with stages, for now).
  PipelineTrainer(const Scenario& scenario, ComputeTiming timing, comm::Communicator* comm = nullptr);

  int ranks() const override { return P_; }
  CompressedTraffic compressed_traffic() const override;
  bool holds(int stage) const { return world_.local_index(stage) >= 0; }
  PipelineRank& stage(int s) { return *stages_[size_t(world_.local_index(s))]; }

  StepRecord train_step(int step, const int32_t* inputs, const int32_t* targets, int sequences,
                        bool record = true) override;
  float evaluate(const int32_t* inputs, const int32_t* targets, int sequences) override;
  bool syncs_weights(int) const override { return true; }
  bool writer() const override { return world_.writer(); }
  void save_state(std::ostream& out) const override;
  void load_state(std::istream& in) override;

 private:
  Scenario scenario_;
  const kernels::Backend* k_;
  int P_;
  RankWorld world_;
  std::vector<std::unique_ptr<PipelineRank>> stages_;  // local stages, in world_.local_ranks() order
};

}  // namespace lowband::parallel
