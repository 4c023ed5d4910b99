#pragma once
// The step graphs `estimate` replays for a scenario's layout: its trainer's own
// steps run dry (parallel/dry_steps.h), the one that syncs and, with a periodic
// sync, one between; and what each replica's messages would carry uncompressed
// (the trainer's compressed_traffic_of).
#include <string>
#include <vector>

#include "runtime/estimate/estimate.h"
#include "runtime/scenario/scenario.h"
#include "sim/step_graph.h"

namespace lowband::estimate_detail {

struct LayoutSteps {
  // The steps that sync first, sync_graphs of them (with data_sync.delay_steps
  // τ > 0 each the window of τ steps beside its exchange: graphs[i].steps();
  // with data_sync.fragments F > 1 one per fragment, in the order they come);
  // with a periodic sync last the step between syncs.
  std::vector<sim::StepGraph> graphs;
  int sync_graphs = 1;
  // Where in the period (step mod period_steps) each sync graph begins; a window
  // (delay_steps > 0) only after the step that issued its exchange (not at step 0).
  std::vector<int> sync_offsets;
  bool windows = false;
  std::vector<double> weights;  // each graph's share of one sync period
  std::string periodic_sync;    // "sparse", "diloco", "sparseloco"; "" when every step is alike
  int period_steps = 1;
  double tokens = 0, model_flops = 0;
  std::vector<std::string> replica_shapes;  // data layouts
  std::vector<double> part_message_bytes;   // diloco / sparseloco: one holder's message per part
};

LayoutSteps build_layout_steps(const Scenario& scenario);

// All replicas together: what the "kv" + "dkv" and the "act" + "act_grad"
// transfers of one step would carry uncompressed, and the codecs' descriptions.
struct Uncompressed {
  double kv_bytes = 0, boundary_bytes = 0;
  std::string kv_codec, boundary_codec;
};

Uncompressed uncompressed_traffic(const Scenario& scenario);

// estimate's changing_network section (changing_network.cpp); nominal_seconds:
// each of steps.graphs' step on the nominal network.
ChangingNetworkSection replay_on_changing_network(const sim::NetworkSpec& network, const LayoutSteps& steps,
                                                  const std::vector<double>& nominal_seconds, int step_count,
                                                  int checkpoint_every, double tokens_per_step);

}  // namespace lowband::estimate_detail
