#pragma once
// The step graph of ONE training step of context parallelism, built from the
// model's shapes alone (no training): per layer, K/V exchanged around a ring or
// by a direct all-gather, blockwise causal attention on each block as it arrives,
// the backward pass returning dK/dV partials to their owners, and the weight
// gradients kept equal across the P ranks (bucketed ring all-reduce, or a sparse
// sync). Compute seconds come from each node's device profile (runtime/cost_model.h).
//
// Transfers are tagged "kv", "dkv" and "grad_sync"; compute tasks "embed", "qkv",
// "attention", "mlp", "lm_head", and the same with "_bwd", plus "optimizer".
// Every compute task on a rank depends on the rank's previous one: a GPU runs
// them one after another, while transfers overlap with them.
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/scenario/scenario.h"
#include "sim/step_graph.h"

namespace lowband::parallel {

// A recorded step's own figures (runtime/parallel/context_trainer.h): when given,
// the graph keeps exactly its shape but takes compute seconds and K/V message
// bytes from here instead of the device profile and the shapes.
class StepFigures {
 public:
  virtual ~StepFigures() = default;
  // Seconds of compute task `tag` on `rank`. layer: the model layer (-1 outside
  // the layers); kv_owner: the owner of the K/V block of an "attention" or
  // "attention_bwd" task (-1 for other tasks). A negative value keeps the
  // device profile's time.
  virtual double compute_seconds(int rank, const char* tag, int layer, int kv_owner) const = 0;
  // Wire bytes of one "kv" (backward false) or "dkv" (true) message carrying
  // `owner`'s block of `layer` (whole batch, K and V together).
  virtual double kv_message_bytes(int layer, int owner, bool backward) const = 0;
};

struct ContextScheduleOptions {
  // false: the graph of a step without the weight sync (the c - 1 steps between
  // sparse syncs); with weight_sync = all_reduce every step has it.
  bool include_weight_sync = true;
  bool include_optimizer = true;  // the AdamW update at the end of the step
  const StepFigures* figures = nullptr;  // measured figures of a real step; null: shapes only
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

using TokenRange = std::pair<int64_t, int64_t>;  // [begin, end) global token offsets

// The token ranges a rank holds of a seq_len-token sequence split over P ranks:
// contiguous: [r·T/P, (r+1)·T/P); zigzag: chunks r and 2P-1-r of T/(2P) tokens.
// Boundaries round down, so uneven lengths still cover [0, T) exactly once.
std::vector<TokenRange> rank_token_ranges(int64_t seq_len, int ranks, CpSplit split, int rank);

// Causal (query, key) pairs between the queries of one set of ranges and the keys
// of another (one sequence).
double causal_pairs(const std::vector<TokenRange>& queries, const std::vector<TokenRange>& keys);


}  // namespace lowband::parallel
