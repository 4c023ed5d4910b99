#pragma once
// The step graph of ONE training step of data parallelism (parallel.data > 1 or
// parallel.replicas), from the model's shapes alone: every replica's step as
// its own ranks' programs run dry (dry_run.h: ContextRank, or PipelineRank for
// pipelines and pipeline x context), on its ranks and nodes (replica_scenario), plus the data
// synchronisation as LayoutTrainer records it (layout_trainer.h):
//  - all_reduce: each gradient bucket summed over the data group (the ranks at
//    the same index of every replica), "grad_sync", deferred where the replica's
//    own bucket sums are (the backward overlaps them), before the optimiser (a
//    dry context rank calls it itself, through DataStep);
//  - diloco / sparseloco, on a step that ends with the outer step
//    (outer_sync = true): after its inner step each rank, for each part it holds
//    (data/parts.h), in part order, one collective over the holders of that part
//    with its context index (sync::OuterSync::exchange_sizes, the outer step's
//    own call in its dry mode): diloco an all-reduce of the float32 pseudo-gradient
//    (4 bytes per parameter), sparseloco an all-gather of every replica's packed
//    message (sync::packed_bytes), both "pseudo_grad"; with data_sync.exchange
//    relay the all-gather goes through the relay node (sim::relay_all_gather).
// The logs are assembled once (comm::assemble_step_graph), so the graph compares
// with a recorded LayoutTrainer step transfer for transfer.
#include <vector>

#include "runtime/parallel/data/parts.h"
#include "runtime/scenario/scenario.h"
#include "sim/step_graph.h"

namespace lowband::parallel {

struct DataStepGraph {
  sim::StepGraph graph;    // on the scenario's nodes
  double tokens = 0;       // tokens per step, all replicas: batch_size · seq_len
  double model_flops = 0;  // forward + backward, all replicas
  std::vector<ModelPart> parts;             // diloco / sparseloco: what the outer step syncs
  std::vector<double> part_message_bytes;   // per part: one holder's message (diloco 4·n, sparseloco packed)
  std::vector<std::string> replica_shapes;  // per replica, e.g. "2 stages x 1 context rank, compressed boundaries"
};

// Throws InputError naming the key for a layout the trainer refuses
// (check_replicas) or a replica its estimate refuses.
DataStepGraph build_data_parallel(const Scenario& scenario, bool outer_sync);

// One holder's outer-sync message for `part` under `sync`: diloco 4 bytes per
// parameter; sparseloco the packed message (sync::packed_bytes of the part's chunk plan).
double outer_message_bytes(const ModelConfig& model, const DataSyncConfig& sync, const ModelPart& part);

}  // namespace lowband::parallel
