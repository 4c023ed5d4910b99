#pragma once
// `lowband estimate`: one training step of the scenario's layout (context ranks,
// pipeline stages of them, or data-parallel replicas of either; parallel::layout_kind,
// the rule LayoutTrainer composes its ranks by), from the training's own rank programs run dry
// (runtime/parallel/dry_steps.h), replayed on the SimGrid network (sim/replay.h).
//
// One result for every layout: the figures every step has, each defined once
// here, and a section for each part of the layout that applies (they compose: a
// data layout whose replicas are pipelines of context ranks has all of them).
// With a periodic sync (a sparse weight sync every c > 1 steps, diloco or
// sparseloco every H steps) the step with the sync and the step between syncs
// are replayed, and every per-step figure is their average over one period
// (one with, the others without).
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "runtime/compress/mos_ranks.h"
#include "runtime/scenario/scenario.h"
#include "sim/bound.h"
#include "sim/step_graph.h"

namespace lowband {

// Context ranks (parallel.context > 1) in the layout or in its replicas.
struct ContextSection {
  int context_ranks = 0;
  std::string kv_codec;
  std::optional<compress::MosRanks> kv_ranks;  // MoS: the kept ranks and compressed layers
  int sequences_in_flight = 1;  // per context rank without pipeline stages (parallel.microbatches)
  // "kv" + "dkv" bytes sent over what they carry uncompressed (all ranks): 1 without compression.
  double kv_bytes_ratio = 1, kv_bytes_saved_fraction = 0;
};

struct BoundaryTraffic {
  int from_stage = 0;         // the boundary between from_stage and from_stage + 1
  double forward_bytes = 0;   // "act" from_stage -> from_stage + 1 per step, all rank pairs (all replicas)
  double backward_bytes = 0;  // "act_grad" back
};

// Pipeline stages (parallel.pipeline > 1) in the layout or in its replicas.
struct PipelineSection {
  int stages = 0, microbatches = 0;  // stages: the deepest replica's
  std::string schedule;              // "gpipe", "1f1b"
  // Idle rank time over all rank time, Σ_r (step − compute_r) / (ranks · step):
  // every wait (the schedule's fill and drain, messages). The ideal one is the
  // schedule's alone for equal stages on a free network: (P − 1)/(M + P − 1).
  double bubble_fraction = 0, ideal_bubble_fraction = 0;
  std::vector<BoundaryTraffic> boundaries;  // one per stage pair, first to last
  double boundary_bytes_ratio = 1;          // "act" + "act_grad" bytes over uncompressed (n·d·b each way)
  std::string boundary_codec;
};

// K/V exchange and stage boundaries together (context and pipeline): step − the
// step replayed with those transfers free, each kind on its own. They can
// overlap, so they need not sum to exposed_comm_seconds.
struct ExposedByKind {
  double kv_seconds = 0, boundary_seconds = 0, grad_sync_seconds = 0;
};

// Data-parallel replicas (parallel.data > 1 or parallel.replicas).
struct DataSection {
  int replicas = 0;
  std::vector<std::string> replica_shapes;
  std::string data_sync;  // "all_reduce", "diloco", "sparseloco"
};

// A sync that not every step runs: a sparse weight sync every c > 1 steps, or
// diloco / sparseloco every H steps.
struct PeriodicSync {
  std::string method;  // "sparse", "diloco", "sparseloco"
  int inner_steps = 1;  // steps per sync period: c or H
  double inner_step_seconds = 0;  // a step without the sync
  // The step that ends with it; with data_sync.delay_steps τ > 0 the window of
  // the τ steps beside its exchange, from its launch to its merge.
  double sync_step_seconds = 0;
  int delay_steps = 0;   // τ (diloco, sparseloco)
  int fragments = 1;     // F (diloco, sparseloco): the figures per sync are the mean over the period's F
  int window_steps = 1;  // the steps sync_step_seconds covers: τ, or 1
  // diloco / sparseloco: the outer step's own compute (Δ, compression, decoding,
  // the outer optimiser: "outer_sync" spans), the busiest rank's.
  double outer_compute_seconds = 0;
  // What the sync adds: sync step (window) − window_steps · inner step −
  // outer_compute_seconds, the exchange's time not hidden behind compute.
  double comm_per_sync_seconds = 0;
  std::map<std::string, double> bytes_per_rank_per_sync;  // the sync step's, as bytes_per_rank_per_step
  // diloco / sparseloco: one replica's message per sync (each of its context
  // ranks sends one such set), summed over the parts (with fragments: over the
  // period, / F), and per part.
  double message_bytes_per_replica = 0;
  std::vector<double> part_message_bytes;
  std::string exchange;  // "all_reduce", "all_gather", "relay" ("" for the sparse weight sync)
  // Exchange relay: its node (no rank's) and what it sends on per sync.
  int relay_node = -1;
  double relay_bytes_per_sync = 0;
};

// The physical bound beside the step (sim/bound.h): what no schedule of this
// step's transfers and compute can beat on this network, each averaged over the
// sync period as the step is. Three lower bounds, each the step if only one
// resource were finite (or less):
//  bandwidth: the busiest link's bytes over its capacity. Every transfer is routed
//             as the platform routes it (star: the sender's uplink, the receiver's
//             downlink; full mesh: the pair's link one way; clusters: access links
//             and the WAN link; explicit links: each node's cut, out and in), the
//             bytes of every step graph of the period weighted as the step is.
//  latency:   the longest chain of dependent tasks with compute free and each
//             transfer its route's latency (no bytes).
//  compute:   the step with every transfer free (free_network_step_seconds: its
//             chain of compute, never less than the busiest rank's compute_seconds).
// bound_seconds is their maximum, bound_kind which one; step_over_bound = step / bound.
struct BoundSection {
  double bound_seconds = 0;
  std::string bound_kind;     // "bandwidth", "latency", "compute"
  std::string busiest_link;   // "node 3's uplink", ...; "" when no transfer crosses a link
  double busiest_link_bytes = 0, busiest_link_bandwidth_bytes_per_s = 0;
  double busiest_link_seconds = 0;  // the bandwidth bound
  std::map<std::string, double> busiest_link_bytes_by_kind;  // its bytes by kind tag ("kv", "grad_sync", ...)
  double latency_bound_seconds = 0;
  double compute_bound_seconds = 0;
  double step_over_bound = 0;
  double max_tokens_per_s = 0;  // tokens_per_step / bound_seconds: no schedule does more here
};

// On a changing network (network.dynamics): training.steps steps of the layout replayed
// back to back from the run's clock 0, as a run replays them (with a periodic
// sync, the sync step after each period's inner steps; under network.restart
// restarting from the last multiple of training.checkpoint_every). The per-step
// figures above stay those of the nominal network.
struct ChangingNetworkSection {
  int steps = 0;
  double total_seconds = 0;          // the run's clock after the last step
  double nominal_total_seconds = 0;  // the same steps on the nominal network
  double lost_seconds = 0;           // total − nominal
  double mean_step_seconds = 0, slowest_step_seconds = 0;
  double tokens_per_s = 0;           // over the whole run
  bool restart_policy = false;       // network.restart given
  int restarts = 0;                  // under it: times the run went back to a checkpoint
  double replay_wall_seconds = 0;
};

struct Estimate {
  std::string parallelism;  // "context", "pipeline", "pipeline x context", "data"
  int ranks = 0;            // all ranks of the layout (a relay is none)
  double step_seconds = 0;  // averaged over the sync period
  double tokens_per_step = 0;  // batch_size · seq_len
  double tokens_per_s = 0;
  double compute_seconds = 0;  // the busiest rank's compute (its busy time)
  // The step with every transfer free (its critical path of compute), and what
  // communication adds: step − that. compute_utilisation = free network step / step.
  // (Before one front-end, a data layout's compute_seconds was this critical path
  // and a context layout's exposed comm step − compute_seconds.)
  double free_network_step_seconds = 0, exposed_comm_seconds = 0, compute_utilisation = 0;
  // Bytes one rank sends over the network per step, by kind and "total": the
  // most any rank's node sends (transfers within a node are not counted).
  std::map<std::string, double> bytes_per_rank_per_step;
  // The busiest rank's total in the busiest single step (a periodic sync's step,
  // or the first of a window's, which launches the exchange): the peak beside
  // bytes_per_rank_per_step's average.
  double peak_bytes_per_rank_per_step = 0;
  double model_flops_per_step = 0;  // forward + backward, no recompute, all ranks
  double peak_flops_per_s = 0;      // Σ ranks' peak FLOP/s at the scenario dtype
  double mfu = 0;                   // model_flops_per_step / (step_seconds · peak_flops_per_s)
  std::string network_model;        // sim::to_string(NetworkModel)
  std::string network;              // sim::describe(network)
  double replay_wall_seconds = 0;   // wall time of the replay (all graphs)
  std::optional<DataSection> data;
  std::optional<ContextSection> context;
  std::optional<PipelineSection> pipeline;
  std::optional<ExposedByKind> exposed_by_kind;
  std::optional<PeriodicSync> sync;
  std::optional<ChangingNetworkSection> changing_network;
  BoundSection bound;  // every layout has one
};

// Throws InputError naming the scenario key for a layout the trainer refuses.
// Every figure is for the nominal network; with network.dynamics also the
// changing_network section over the scenario's training.steps.
Estimate estimate(const Scenario& scenario);

// One flat object: the common keys always, each section's keys exactly when it
// applies (step_seconds, bytes_per_rank_per_step, kv_bytes_ratio, boundary_bytes, ...).
nlohmann::json to_json(const Estimate& result);

// For the terminal: the scenario and layout in one block, the figures in another.
std::string format_estimate_table(const Scenario& scenario, const Estimate& result);

// The physical bound of a step made of `graphs`, each weighted as the step is
// averaged (one graph: weight 1), on the network `links` describes; step_seconds
// and tokens_per_step for step_over_bound and max_tokens_per_s.
BoundSection physical_bound(const sim::NetworkLinks& links, const std::vector<const sim::StepGraph*>& graphs,
                            const std::vector<double>& weights, double step_seconds, double tokens_per_step);
// Its JSON keys (bound_seconds, bound_kind, busiest_link, ...), as to_json writes them.
nlohmann::json to_json(const BoundSection& bound);

// The step with every transfer free: the longest chain of compute seconds
// through `graph` (a rank's compute tasks are chained, so nothing shares a host).
double free_network_step_seconds(const sim::StepGraph& graph);

}  // namespace lowband
