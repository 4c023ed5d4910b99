#pragma once
// The scenario's training steps run dry: its LayoutTrainer (layout_trainer.h)
// on the dry kernels (shapes only) over null transports, recorded, so that a
// step's graph is the graph a real step of the same trainer records, task for
// task, whatever the layout (context ranks, pipeline stages with context ranks
// inside, replicas under any data sync). `estimate` replays these graphs; no
// second description of a step exists to drift from the trainer.
//
// A step's graph depends on its index alone (a dry rank keeps no values), so any
// step may be taken without those before it.
#include <vector>

#include "runtime/scenario/scenario.h"
#include "sim/step_graph.h"

namespace lowband::parallel {

// The step (from 0) that stands for the steady state: past any K/V codec
// warm-up, the last step of a sync period (sync_step: the one that syncs,
// sync::syncs_at) or its first (one between syncs).
int steady_step(const Scenario& scenario, bool sync_step);

// Step `step` of the scenario's trainer, run dry: its graph on the scenario's
// nodes. InputError naming the key for a layout the trainer refuses.
sim::StepGraph dry_step_graph(const Scenario& scenario, int step);

// The graph of steady_step(scenario, sync_step). Where an outer sync runs after
// every step (parallel.data_sync.inner_steps = 1) no step of the scenario lies
// between syncs: the step between is then the inner step as it is with
// inner_steps 2 (an inner step does not depend on H). An outer sync beside the
// inner steps (parallel.data_sync.delay_steps τ > 0) has no sync step: the
// graph of the sync is then the window of τ steps from its exchange's launch to
// its merge (StepRecord::window_open; graph.steps() == τ), the steps before
// taken dry to stage it.
sim::StepGraph steady_step_graph(const Scenario& scenario, bool sync_step = true);

// The syncs of one steady period, in the order they come: with Streaming
// DiLoCo's fragments (parallel.data_sync.fragments F > 1) each fragment's sync
// step (or window), fragment 1's first and fragment 0's last; else
// {steady_step_graph(scenario, true)}. The step between syncs is that of the
// scenario with one fragment (steady_step_graph(..., false): an inner step does
// not depend on them).
std::vector<sim::StepGraph> steady_sync_graphs(const Scenario& scenario);

}  // namespace lowband::parallel
