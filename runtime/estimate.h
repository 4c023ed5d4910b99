#pragma once
// `lowband estimate`: the step time and throughput of context-parallel training of
// a scenario's model on its network, from the model's shapes alone (no training):
// build the step graph (runtime/parallel/context/step_graph.h: the ranks' programs,
// assembled as a recorded step is) and replay it on the SimGrid network (sim/replay.h).
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/scenario/scenario.h"

namespace lowband {

struct EstimateResult {
  // Per step. With a sparse weight sync every c steps these are the average of one
  // step with the sync and c - 1 without.
  double step_seconds = 0;
  double tokens_per_step = 0;       // batch_size · seq_len
  double tokens_per_s = 0;
  double compute_seconds = 0;       // max over ranks of the time a rank computes
  double exposed_comm_seconds = 0;  // from the replay: communication not hidden by compute
  // Bytes one rank sends per step, by kind ("kv", "dkv", "grad_sync") and "total":
  // the maximum over ranks.
  std::map<std::string, double> bytes_per_rank_per_step;
  double model_flops_per_step = 0;  // forward + backward, no recompute, all ranks
  double peak_flops_per_s = 0;      // Σ ranks' peak FLOP/s at the scenario dtype
  double mfu = 0;                   // model_flops_per_step / (step_seconds · peak_flops_per_s)
  // K/V and dK/dV bytes sent, compressed vs uncompressed (1 without compression),
  // and the fraction saved (0.965 for the paper's MoS setting).
  double kv_bytes_ratio = 1;
  double kv_bytes_saved_fraction = 0;
  int ranks = 0;
  std::string network_model;        // sim::to_string(NetworkModel)
  std::string network;              // sim::describe(network)
  double replay_wall_seconds = 0;   // wall time spent replaying (all graphs)
  int steps_averaged = 1;           // graphs replayed: 1, or 2 with a sparse sync every c > 1
};

EstimateResult estimate(const Scenario& scenario);

// Keys carry units: step_seconds, tokens_per_s, bytes_per_rank_per_step, ...
nlohmann::json to_json(const EstimateResult& result);

// A table for the terminal: the scenario in one block, the figures in another.
std::string format_estimate_table(const Scenario& scenario, const EstimateResult& result);

}  // namespace lowband
