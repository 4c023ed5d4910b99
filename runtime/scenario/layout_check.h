#pragma once
// The layout checks: parallel layouts that no rank program trains and no
// estimate models, refused in one place. Loading a scenario runs them (so
// validate, sweep --dry-run, run and estimate refuse alike, naming the JSON
// path); the trainers and estimates run them again for scenarios built in code.
#include <vector>

#include "runtime/scenario/scenario.h"

namespace lowband {

// Each replica's shape: parallel.replicas, or parallel.data copies of pipeline x
// context, their boundaries compressed as compression.boundary says.
std::vector<ReplicaConfig> replica_shapes(const ParallelConfig& parallel);

// InputError at the JSON path to blame: pipeline stages with a tied embedding;
// a weight sync other than all_reduce without context ranks; data-parallel replicas (parallel.data > 1 or parallel.replicas) with more
// stages than layers, of different shapes or boundary compression under
// all_reduce, of different context degrees, under a context-only weight sync,
// or a batch they cannot share.
void check_layout(const Scenario& scenario);

}  // namespace lowband
