#pragma once
// The step graph of ONE training step of pipeline parallelism, from the model's
// shapes alone (no training): every rank's own program (PipelineRank) run dry
// (dry_run.h), assembled as a recorded step is, so the two compare task for
// task. Each stage runs the op order of pipeline/schedule.h; per op:
//   F(m): receive microbatch m's activations from stage s−1 ("act"), compute
//         ("stage_fwd"; with C > 1 "stage_in", the layers' K/V exchange,
//         "stage_out"), send them on to s+1;
//   B(m): receive ∂L/∂x from stage s+1 ("act_grad"), compute ("stage_bwd", or
//         the context ranks' spans), send the gradient back to s−1.
// Then (C > 1) the stage's weight sync over its context group (all_reduce: the
// gradient sums; the other compression.weight_sync methods' collectives around
// the optimiser), a ring all-reduce over all ranks ("loss": the loss sum and the
// squared gradient norm for global clipping, 16 bytes unless each context rank
// clips by its own) and "optimizer" on every rank. With parallel.context =
// C > 1 boundary messages go (s, c) -> (s + 1, c), each of rank c's rows of the
// microbatch. Boundary bytes come from the boundary codec (compression.boundary).
#include <string>
#include <vector>

#include "runtime/scenario/scenario.h"
#include "sim/step_graph.h"

namespace lowband::parallel {

struct PipelineStep {
  sim::StepGraph graph;
  double tokens = 0;       // tokens per step: batch_size · seq_len
  double model_flops = 0;  // forward + backward (3 x forward, no recompute), all stages
  double message_bytes = 0;   // one microbatch's "act" message (n rows through the codec)
  double gradient_bytes = 0;  // one microbatch's "act_grad" message
  // What one boundary's two directions carry per step uncompressed (2·M·n·d·b),
  // to measure the compression ratio against.
  double uncompressed_boundary_bytes = 0;
  std::string boundary_codec;  // the codec's description
  // parallel.context: ranks per stage (ContextAttention inside each stage when > 1).
  int context_ranks = 1;
  // C > 1: what the graph's "kv" and "dkv" transfers would carry uncompressed (all
  // ranks, per step), and the K/V codec's description.
  double uncompressed_kv_bytes = 0;
  std::string kv_codec;
};

// Throws InputError naming the scenario key when the scenario cannot be scheduled
// (data parallelism alongside, stages that do not cover the layers, microbatches
// that do not divide the batch, fewer nodes than ranks). weight_sync_step false:
// a step without the sparse weight average (compression.weight_sync sparse, the
// sync_every − 1 steps between), else alike.
PipelineStep build_pipeline_parallel(const Scenario& scenario, bool weight_sync_step = true);

// The step's figures but its graph (no rank runs). Throws as above.
PipelineStep pipeline_step_figures(const Scenario& scenario);

}  // namespace lowband::parallel
