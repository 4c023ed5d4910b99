#pragma once
// The step graph of ONE training step of context parallelism alone (pipeline 1,
// data 1), from the model's shapes (no training): the real rank programs run dry
// (dry_run.h: ContextRank on the dry kernels over a null transport, recorded),
// assembled as a recorded step is (comm::assemble_step_graph) and moved onto
// the ranks' nodes (parallel.placement). `estimate` replays it.
//
// Transfers are tagged "kv", "dkv", "grad_sync", "loss" (with the K/V codec's
// error sums) and the codec's "codec_grad"; compute tasks "embed", "qkv", "attention",
// "mlp", "lm_head", the same with "_bwd", and "optimizer" (a collective's
// members end it with a zero-second task of its tag).
#include "runtime/scenario/scenario.h"
#include "sim/step_graph.h"

namespace lowband::parallel {

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
void check_context_parallel(const Scenario& scenario);

// weight_sync_step false: a step without the sparse weight average (the
// sync_every − 1 steps between; compression.weight_sync sparse), else alike.
ContextStep build_context_parallel(const Scenario& scenario, bool weight_sync_step = true);

sim::StepGraph build_context_parallel_step(const Scenario& scenario, bool weight_sync_step = true);

}  // namespace lowband::parallel
