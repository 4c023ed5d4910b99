#pragma once
// The step graph of ONE training step of context parallelism, built from the
// model's shapes alone (no training): per layer, K/V exchanged around a ring or
// by a direct all-gather, blockwise causal attention on each block as it arrives,
// the backward pass returning dK/dV partials to their owners, and the weight
// gradients kept equal across the P ranks (bucketed ring all-reduce, or a sparse
// sync). Compute seconds come from each node's device profile (context_costs.h).
//
// Transfers are tagged "kv", "dkv" and "grad_sync"; compute tasks "embed", "qkv",
// "attention", "mlp", "lm_head", and the same with "_bwd", plus "optimizer".
// Every compute task on a rank depends on the rank's previous one: a GPU runs
// them one after another, while transfers overlap with them.
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/parallel/context_costs.h"
#include "runtime/scenario/scenario.h"
#include "sim/step_graph.h"

namespace lowband::parallel {

struct ContextScheduleOptions {
  // false: the graph of a step without the weight sync (the c - 1 steps between
  // sparse syncs); with weight_sync = all_reduce every step has it.
  bool include_weight_sync = true;
  bool include_optimizer = true;  // the AdamW update at the end of the step
};

struct ContextStep {
  sim::StepGraph graph;
  double tokens = 0;       // tokens per step: batch_size · seq_len
  double model_flops = 0;  // forward + backward (3 x forward, no recompute), all ranks
  // What the "kv" and "dkv" transfers of this graph would carry uncompressed
  // (summed over ranks), to measure the compression ratio against.
  double uncompressed_kv_bytes = 0;
};

// Throws InputError naming the scenario key when the scenario cannot be scheduled
// (pipeline or data parallelism, fewer nodes than ranks, chunks with no tokens).
ContextStep build_context_parallel(const Scenario& scenario,
                                   const ContextScheduleOptions& options = {});

sim::StepGraph build_context_parallel_step(const Scenario& scenario,
                                           bool include_weight_sync = true);

}  // namespace lowband::parallel
