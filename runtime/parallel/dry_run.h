#pragma once
// A training step of the real rank programs run dry (shapes only; docs/design.md
// §2): every rank of a replica (ContextRank, PipelineRank) on the dry kernels
// (kernels::Device::dry), its K/V codec and weight sync in their dry modes
// (compress/dry_codec.h, ReplicaSync; a pipeline's boundary codec too), over a null transport (comm/null.h) under
// the recording communicator, with profile timing. No rank's control flow
// depends on values it receives, so the ranks run one after another on this
// thread, each into its own comm::RankLog, and comm::assemble_step_graph matches
// the logs as it does a recorded step's. Nothing of the model's size is
// allocated (parameters, gradients, moments, activations, K/V): a rank costs its
// log and its program's bookkeeping, whatever the model. `estimate` times this
// (context/step_graph.h).
#include <vector>

#include "comm/recording.h"
#include "runtime/scenario/scenario.h"
#include "sim/step_graph.h"

namespace lowband::parallel {

// Where a dry rank's messages go: the world ranks of its group, in the group's
// rank order, and the communicator number its events carry.
struct DryGroup {
  std::vector<int> ranks;
  int comm_id = 0;
};

// The step (from 0) whose dry run stands for the steady state: compressing
// (after any K/V codec warm-up) and, with the sparse weight sync every c > 1
// steps, one that syncs (weight_sync_step) or one between syncs.
int steady_step(const Scenario& scenario, bool weight_sync_step);

// Step `step` of context rank c of a replica (`replica`: its scenario, as
// replica_scenario gives it) run dry into `log`, its K/V and collectives over
// `group`; with `data` (synchronous data parallelism: the ranks holding the same
// part in every replica, of which it is rank `data_rank`) each gradient bucket is
// summed over `data` too, as LayoutTrainer's DataStep has it.
void dry_context_rank(const Scenario& replica, int c, int step, const DryGroup& group, comm::RankLog& log,
                      const DryGroup* data = nullptr, int data_rank = 0);

// Step `step` of world rank `rank` (stage rank / C, context rank rank % C) of a
// pipeline replica run dry into `log` (PipelineRank; `world`: the replica's
// ranks), its pipeline and context groups (C > 1) those PipelineRank splits from
// the world; `data` as dry_context_rank's.
void dry_pipeline_rank(const Scenario& replica, int rank, int step, const DryGroup& world, comm::RankLog& log,
                       const DryGroup* data = nullptr, int data_rank = 0);

// compression.boundary embedding_residual on a pipeline replica (`replica`, its
// ranks from world rank `first`): the first stage's embedding sent to the other
// stages after an outer step (PipelineRank::snapshot_embedding), dry, into
// `logs` (the world's); the pipeline of context rank c is communicator
// comm_id + c. Nothing for a replica of other boundaries.
void dry_embedding_snapshot(const Scenario& replica, int first, int comm_id, std::vector<comm::RankLog>& logs);

// Step `step` of every rank of the context-parallel replica (parallel.context
// ranks; pipeline and data 1), assembled and placed on parallel.placement's
// nodes as RankWorld places a recorded step.
sim::StepGraph dry_context_step(const Scenario& scenario, int step);

}  // namespace lowband::parallel
