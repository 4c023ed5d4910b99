#pragma once
// The step graph of ONE training step of pipeline parallelism, built from the
// model's shapes alone (no training). Each stage runs the op order of
// pipeline_schedule.h; per op:
//   F(m): receive microbatch m's activations from stage s−1 ("act", sent right
//         after s−1's F(m)), compute "stage_fwd", send them on to s+1;
//   B(m): receive ∂L/∂x from stage s+1 ("act_grad", sent right after s+1's B(m)),
//         compute "stage_bwd", send the gradient back to s−1.
// Then a 16-byte ring all-reduce over all stages ("loss": the loss sum and the
// squared gradient norm for global clipping) and "optimizer" on every stage.
// With parallel.context = C > 1 each stage is C ranks (rank s·C + c) running the
// pipeline x context program (pipeline_context_program.h): boundary messages go
// (s, c) -> (s + 1, c), each of rank c's rows of the microbatch.
// Boundary bytes come from the boundary codec (compression.boundary). The graph
// is the one comm::assemble_step_graph builds from the same program recorded by
// a real run (it is built that way), so the two compare transfer for transfer.
#include <string>
#include <vector>

#include "comm/recording.h"
#include "runtime/parallel/replicas.h"
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
  // parallel.context: ranks per stage (pipeline_context_program.h when > 1).
  int context_ranks = 1;
  // C > 1: what the graph's "kv" and "dkv" transfers would carry uncompressed (all
  // ranks, per step), and the K/V codec's description.
  double uncompressed_kv_bytes = 0;
  std::string kv_codec;
};

// Throws InputError naming the scenario key when the scenario cannot be scheduled
// (data parallelism alongside, stages that do not cover the layers, microbatches
// that do not divide the batch, fewer nodes than ranks, a sparse weight sync with
// context ranks).
PipelineStep build_pipeline_parallel(const Scenario& scenario);

// The same step as each rank's program (logs[r]: rank r's, ranks not placed on
// nodes), before assembly, and the step's figures but its graph; `data`: what
// data parallelism adds per gradient bucket (data_estimate.h). Throws as above.
PipelineStep pipeline_rank_logs(const Scenario& scenario, std::vector<comm::RankLog>& logs,
                                const DataBucketHook& data = {});

}  // namespace lowband::parallel
