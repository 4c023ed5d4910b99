#pragma once
// `lowband estimate` for data parallelism (parallel.data > 1, or
// parallel.replicas): the step graph of every replica with the data sync as the
// trainer records it (runtime/parallel/data/step_graph.h), replayed on the SimGrid
// network. With diloco / sparseloco the step with the outer sync and the one
// without are replayed (one SimGrid run) and averaged over one sync period of
// H = data_sync.inner_steps steps (one with, H − 1 without).
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/scenario/scenario.h"

namespace lowband {

struct DataEstimate {
  std::string method;  // "all_reduce", "diloco", "sparseloco"
  int replicas = 0, ranks = 0, inner_steps = 1;
  std::vector<std::string> replica_shapes;
  // Averaged over the sync period (all_reduce: every step alike).
  double step_seconds = 0;
  double tokens_per_step = 0, tokens_per_s = 0;
  double inner_step_seconds = 0;  // a step without the outer sync
  double sync_step_seconds = 0;   // the step that ends with it (all_reduce: every step)
  // What one outer sync adds: the sync step − an inner step (all_reduce: 0, the
  // sync is inside every step: see exposed_comm_seconds).
  double comm_per_sync_seconds = 0;
  // The step with every transfer free (its critical path of compute), and what
  // communication adds on top, both averaged over the period.
  double compute_seconds = 0, exposed_comm_seconds = 0;
  double compute_utilisation = 0;  // compute / (compute + exposed comm) = compute / step
  // Bytes one rank (node) sends, by kind and "total": the most any rank's node
  // sends (the relay's node is no rank's: its bytes are below).
  std::map<std::string, double> bytes_per_rank_per_step;  // averaged over the period
  std::map<std::string, double> bytes_per_rank_per_sync;  // the sync step's
  // sparseloco with exchange relay: the relay's node and what it sends on per
  // sync (each message to R − 1 replicas); -1 and 0 otherwise.
  int relay_node = -1;
  double relay_bytes_per_sync = 0;
  // diloco / sparseloco: one replica's message per sync (each of its context
  // ranks sends one such set), summed over the parts, and per part.
  double message_bytes_per_replica = 0;
  std::vector<double> part_message_bytes;
  double model_flops_per_step = 0, peak_flops_per_s = 0, mfu = 0;
  std::string network_model, network;
  double replay_wall_seconds = 0;
};

DataEstimate estimate_data(const Scenario& scenario);

nlohmann::json to_json(const DataEstimate& result);
std::string format_data_table(const Scenario& scenario, const DataEstimate& result);

}  // namespace lowband
