#pragma once
// `lowband estimate` for pipeline parallelism (parallel.pipeline > 1), with
// context parallelism inside each stage or not (parallel.context): build the step
// graph from the model's shapes (runtime/parallel/pipeline/step_graph.h), replay it on
// the SimGrid network, and report the step with its pipeline bubble, what crosses
// each stage boundary and (context > 1) the K/V exchange inside the stages.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/scenario/scenario.h"
#include "sim/step_graph.h"

namespace lowband {

struct BoundaryTraffic {
  int from_stage = 0;            // the boundary between from_stage and from_stage + 1
  double forward_bytes = 0;      // "act" from_stage -> from_stage + 1, per step (all C rank pairs)
  double backward_bytes = 0;     // "act_grad" back, per step
};

// Context parallelism inside the stages (context_ranks > 1): per step, the most
// any one rank sends of each kind, and where the exposed communication comes from.
struct ContextTraffic {
  double kv_bytes_per_rank = 0, dkv_bytes_per_rank = 0, grad_sync_bytes_per_rank = 0;
  double kv_bytes_ratio = 1;  // kv + dkv sent over the same uncompressed
  std::string kv_codec;
  // step − the step replayed with those transfers free (the others on the
  // network as they are): what the K/V exchange ("kv", "dkv"), the stage
  // boundaries ("act", "act_grad") and the gradient sync ("grad_sync") each add
  // on their own. They can overlap, so they need not sum to exposed_comm_seconds.
  double exposed_kv_seconds = 0, exposed_boundary_seconds = 0, exposed_grad_sync_seconds = 0;
};

struct PipelineEstimate {
  double step_seconds = 0;
  double tokens_per_step = 0;      // batch_size · seq_len
  double tokens_per_s = 0;
  double compute_seconds = 0;      // busiest rank: its forwards, backwards and optimizer
  // Idle rank time over all rank time: Σ_r (step − compute busy_r) / (P·C · step).
  // It counts every wait, the schedule's fill and drain and the waits for messages;
  // ideal_bubble_fraction is the schedule's alone for equal stages on a free
  // network: (P − 1)/(M + P − 1) of the forward-backward part.
  double bubble_fraction = 0;
  double ideal_bubble_fraction = 0;
  // What communication adds: step − the same graph's step with every transfer free
  // (free_network_step_seconds, its critical path of compute).
  double exposed_comm_seconds = 0;
  double free_network_step_seconds = 0;
  std::vector<BoundaryTraffic> boundaries;  // one per stage pair, first to last
  double boundary_bytes_ratio = 1;          // boundary bytes over uncompressed (n·d·b each way)
  std::string boundary_codec;
  double model_flops_per_step = 0;          // forward + backward, no recompute, all stages
  double peak_flops_per_s = 0;              // Σ ranks' peak FLOP/s at the scenario dtype
  double mfu = 0;                           // model_flops_per_step / (step_seconds · peak_flops_per_s)
  int stages = 0, microbatches = 0, context_ranks = 1;
  ContextTraffic context;                   // context_ranks > 1 only
  std::string schedule;                     // "gpipe", "1f1b"
  std::string network_model, network;
  double replay_wall_seconds = 0;
};

PipelineEstimate estimate_pipeline(const Scenario& scenario);

// The step with every transfer free: the longest chain of compute seconds
// through `graph` (a rank's compute tasks are chained, so nothing shares a host).
double free_network_step_seconds(const sim::StepGraph& graph);

nlohmann::json to_json(const PipelineEstimate& result);
std::string format_pipeline_table(const Scenario& scenario, const PipelineEstimate& result);

}  // namespace lowband
