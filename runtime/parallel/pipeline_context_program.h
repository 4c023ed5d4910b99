#pragma once
// The program of rank (s, c) of pipeline x context parallelism (P stages of C > 1
// context ranks, rank s·C + c) for ONE training step, as the comm::RankLog events
// a real run records; pipeline_graph.cpp assembles every rank's into the step
// graph. Per op of pipeline_schedule(schedule, P, s, M):
//   F(m): s > 0: recv "act" from (s−1, c); "stage_in" (the embedding on s = 0);
//         each layer of the stage (ContextLayerProgram::forward: "kv" among the
//         stage's ranks); "stage_out" (head + loss on s = P−1); s < P−1: send
//         "act" to (s+1, c);
//   B(m): s < P−1: recv "act_grad" from (s+1, c); "stage_out_bwd"; each layer,
//         last first (ContextLayerProgram::backward: "dkv"); "stage_in_bwd";
//         s > 0: send "act_grad" to (s−1, c).
// Then the stage's gradients all-reduced over its context group, one deferred
// "grad_sync" per gradient bucket (weight_sync.h); over all P·C ranks the K/V
// codec's error sums ("codec_error", deferred: the codec covers every layer);
// after both, "loss" (2 doubles) over all ranks, "optimizer", and the codec's
// parameter gradients ("codec_grad") over all ranks: PipelineRank's order.
// Rank c holds rows = (microbatch sequences)·(its tokens of a sequence) of every
// microbatch (the context split, ContextCosts::ranges), on every stage alike.
// Costs: PipelineCosts::context() (one microbatch's); the codec warm-up's
// "codec_fit" is not in a steady step.
#include <memory>
#include <string>
#include <vector>

#include "comm/recording.h"
#include "runtime/compress/boundary_codec.h"
#include "runtime/compress/kv_codec.h"
#include "runtime/parallel/context_layer_program.h"
#include "runtime/parallel/pipeline_costs.h"
#include "runtime/parallel/replicas.h"
#include "runtime/scenario/scenario.h"

namespace lowband::parallel {

class PipelineContextProgram {
 public:
  // All three must outlive the program.
  PipelineContextProgram(const Scenario& scenario, const PipelineCosts& costs,
                         const compress::BoundaryCodec& boundary);

  // Appends world rank `rank`'s step to `log`; `data`: its gradient buckets
  // summed with the other replicas' after the stage's (PipelineRank's order).
  void append(int rank, comm::RankLog& log, const DataBucketHook& data = {}) const;

  // Rows of one microbatch that context rank c holds (boundary messages carry them).
  int64_t rows(int c) const;
  // What every "kv" and "dkv" transfer of the step would carry uncompressed, all ranks.
  double uncompressed_kv_bytes() const;
  std::string kv_codec() const { return kv_codec_->describe(); }
  const ContextLayerProgram& layers() const { return layers_; }

 private:
  ContextGroup context_group(int stage) const;
  void all_reduce(comm::RankLog& log, const std::vector<int>& members, int comm_id, double bytes,
                  const char* kind, bool deferred) const;

  const Scenario& s_;
  const PipelineCosts& costs_;
  const compress::BoundaryCodec& boundary_;
  int P_, C_, M_;
  std::unique_ptr<compress::KvCodec> kv_codec_;
  ContextLayerProgram layers_;
  double codec_grad_bytes_ = 0;   // the K/V codec's parameter gradients (MoS heads), float32
  double codec_error_bytes_ = 0;  // its reconstruction-error sums, float64
};

}  // namespace lowband::parallel
