#pragma once
// Which training steps sync weights: the one rule the trainers, their dry runs and
// `estimate` ask. Steps count from 0; the last step of each period of P steps syncs,
// P being
//  - parallel.data_sync.inner_steps (H) for data-parallel replicas that train on
//    their own between outer steps (diloco, sparseloco: outer_sync.h);
//  - compression.sync_every for one replica's context ranks under the sparse
//    weight sync (replica_sync.h);
//  - 1 otherwise: every step syncs (gradients all-reduced as the backward runs).
#include "runtime/scenario/scenario.h"

namespace lowband::sync {

// The step's period (any sync: outer or weight), and the weight sync's inside one
// replica (what its context ranks' ReplicaSync runs: all_reduce every step).
int sync_period_steps(const Scenario& s);
int weight_sync_period_steps(const Scenario& s);
inline bool syncs_at(int period_steps, int step) { return (step + 1) % period_steps == 0; }
inline bool syncs_at(const Scenario& s, int step) { return syncs_at(sync_period_steps(s), step); }

// An outer sync (diloco, sparseloco) issues its exchange after step t where
// syncs_at(H, t) and merges it after step t + parallel.data_sync.delay_steps (τ).
// With τ > 0 the exchange is launched as step t + 1 begins and runs beside the
// steps up to the merge.
inline bool merges_at(const DataSyncConfig& d, int step) {
  return step >= d.delay_steps && syncs_at(d.inner_steps, step - d.delay_steps);
}

}  // namespace lowband::sync
