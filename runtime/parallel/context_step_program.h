#pragma once
// The whole training step of context rank c of one context-parallel replica
// (parallel.pipeline 1, C = parallel.context ranks), as the comm::RankLog events
// ContextRank records (context_rank.cpp), built from the model's shapes alone:
// "embed"; each layer's forward (ContextLayerProgram); "lm_head"; the loss sum
// over the replica ("loss", one double, deferred); "lm_head_bwd"; then per
// gradient bucket (head, layers from the last, embedding), after the backward
// that finishes it, its all-reduce over the replica ("grad_sync", deferred, C > 1)
// and the data group's (DataBucketHook); the K/V codec's error sums
// ("codec_error", deferred, C > 1); the join; the sparse weight syncs
// (weight_sync.h, "grad_sync": sparse_grad, topk_grad and lowrank_grad before the
// optimiser, sparse and sparse_update after it); "optimizer"; the codec's
// parameter gradients ("codec_grad"). The codec warm-up's "codec_fit" is not in a
// steady step. Ranks are the replica's (0..C-1, communicator 0); data_graph.cpp
// moves them to the world's. Only data_graph.cpp still uses it: a context-parallel
// replica alone runs the real rank programs dry (dry_run.h).
#include <memory>
#include <vector>

#include "comm/recording.h"
#include "runtime/compress/kv_codec.h"
#include "runtime/parallel/context_costs.h"
#include "runtime/parallel/context_layer_program.h"
#include "runtime/parallel/replicas.h"

namespace lowband::parallel {

class ContextStepProgram {
 public:
  // The scenario must outlive the program. weight_sync_step: whether the step
  // ends with the sparse weight average (compression.weight_sync sparse, every
  // sync_every steps); the other weight syncs are alike on every step.
  explicit ContextStepProgram(const Scenario& scenario, bool weight_sync_step = true);

  int ranks() const { return C_; }
  void append(int rank, comm::RankLog& log, const DataBucketHook& data = {}) const;
  // Forward + backward (3 x forward, no recompute) of the step, all ranks: the
  // attention blocks a causal mask leaves something in.
  double model_flops() const;
  // What the step's "kv" and "dkv" transfers would carry uncompressed, all ranks.
  double uncompressed_kv_bytes() const;

 private:
  // The sparse weight syncs' collectives (ReplicaSync's calls), before (true) or
  // after the optimiser.
  void weight_sync(comm::RankLog& log, const std::vector<int>& group, bool before_optimizer) const;

  const Scenario& s_;
  int C_;
  bool weight_sync_step_;
  ContextCosts costs_;
  std::unique_ptr<compress::KvCodec> codec_;
  ContextLayerProgram layers_;
};

}  // namespace lowband::parallel
