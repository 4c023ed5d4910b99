#pragma once
// The cost (FLOPs, memory bytes) of one microbatch's forward and backward on each
// pipeline stage, and of the stage's optimizer step, from the model's shapes;
// seconds on the stage's node's device profile: what PipelineRank's spans charge
// with profile timing, in a real run and in `estimate`'s dry one (dry_steps.h).
//
// One replica (parallel.data = 1) of P stages of C context ranks each: rank
// (s, c) is world rank s·C + c (layout.h). A stage holds layers
// stage_first_layer .. + stage_layer_count; the first also the embedding, the
// last also the final norm and the LM head. With C > 1 each microbatch is split
// over the stage's ranks as context parallelism splits a batch, and a rank's
// per-layer costs are ContextCosts of the microbatch scenario (the scenario with
// training.batch_size = one microbatch's sequences).
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/cost_model.h"
#include "runtime/parallel/context/costs.h"
#include "runtime/scenario/scenario.h"

namespace lowband::parallel {

class PipelineCosts {
 public:
  // InputError naming the key when the scenario is not a pipeline this models.
  explicit PipelineCosts(const Scenario& scenario);

  int stages() const { return stages_; }
  int context_ranks() const { return context_ranks_; }
  int64_t sequences_per_microbatch() const { return sequences_; }
  int64_t microbatch_rows() const { return sequences_ * s_.model.seq_len; }  // tokens of one microbatch
  int layers(int stage) const;

  // One microbatch through the stage; backward as the context schedule counts it
  // (2 x each dense piece, attention_backward for attention).
  cost::Cost forward(int stage) const;
  cost::Cost backward(int stage) const;
  double parameters(int stage) const;  // what the stage's optimizer updates
  cost::Cost optimizer(int stage) const;

  // One microbatch's sequences as the whole batch, and its ContextCosts: the cost
  // of each context rank's pieces (qkv, attention blocks, mlp, head, embedding).
  const Scenario& microbatch_scenario() const { return *microbatch_; }
  const ContextCosts& context() const { return *context_; }

  // Seconds of `c` on `stage`'s node (C = 1: stage s is rank s); InputError("devices")
  // when the profile gives no finite time (`tag` names the task).
  double seconds(int stage, const cost::Cost& c, const char* tag) const;
  // The same on world rank `rank`'s node.
  double rank_seconds(int rank, const cost::Cost& c, const char* tag) const;

 private:
  const Scenario& s_;
  int stages_, context_ranks_ = 1;
  // Shared: their addresses stay put when the costs are copied or moved
  // (ContextCosts keeps a reference to its scenario).
  std::shared_ptr<const Scenario> microbatch_;
  std::shared_ptr<const ContextCosts> context_;
  int64_t sequences_;
  double elem_;
  double pairs_;  // causal (query, key) pairs of one microbatch
};

// The figures of one step of a pipeline replica: what `estimate` reports beside
// the step's graph.
struct PipelineStep {
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

// Throws InputError naming the key for a pipeline PipelineCosts refuses.
PipelineStep pipeline_step_figures(const Scenario& scenario);

}  // namespace lowband::parallel
