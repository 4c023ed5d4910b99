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
// Whether the scenario's replicas meet in outer steps (diloco, sparseloco with
// more than one replica): the rules above apply.
bool outer_syncs(const Scenario& s);
// Whether step `step` syncs (an outer sync: any fragment issues).
bool syncs_at(const Scenario& s, int step);

// An outer sync (diloco, sparseloco) issues fragment f's exchange after step t
// where t + 1 ≡ shift_f = ⌊f·H/F⌋ (mod H) (F = parallel.data_sync.fragments;
// one fragment: syncs_at(H, t)), and merges it after step t + delay_steps (τ).
// With τ > 0 the exchange is launched as step t + 1 begins and runs beside the
// steps up to the merge. Fragment f holds layers [⌊f·L/F⌋, ⌊(f+1)·L/F⌋) of L,
// the embedding going with fragment 0 and the head with fragment F − 1.
inline int fragment_shift_steps(const DataSyncConfig& d, int f) {
  return int(int64_t(f) * d.inner_steps / d.fragments);
}
inline int fragment_first_layer(const DataSyncConfig& d, int layers, int f) {
  return int(int64_t(f) * layers / d.fragments);
}
inline bool issues_at(const DataSyncConfig& d, int fragment, int step) {
  const int k = step + 1 - fragment_shift_steps(d, fragment);
  return k >= 0 && k % d.inner_steps == 0;  // fragment f first after shift_f steps (f > 0)
}
inline bool merges_at(const DataSyncConfig& d, int fragment, int step) {
  return step >= d.delay_steps && issues_at(d, fragment, step - d.delay_steps);
}
// Whether any fragment issues (merges) after step `step`.
bool issues_at(const DataSyncConfig& d, int step);
bool merges_at(const DataSyncConfig& d, int step);

}  // namespace lowband::sync
