#pragma once
// The replicas of a data-parallel layout (parallel.data, or parallel.replicas)
// and the scenario each one runs on its own: what the trainer
// (layout_trainer.h) builds its ranks from and `estimate` builds each replica's
// step from (runtime/estimate/), so that the two cannot drift apart.
#include <functional>
#include <vector>

#include "comm/recording.h"
#include "runtime/parallel/data/parts.h"
#include "runtime/parallel/layout.h"
#include "runtime/scenario/layout_check.h"
#include "runtime/scenario/scenario.h"
#include "runtime/sync/replica_sync.h"

namespace lowband::parallel {

// Each replica's shape: lowband::replica_shapes (runtime/scenario/layout_check.h).

// World rank of each replica's first rank (replica-major rank order).
std::vector<int> replica_first_ranks(const std::vector<ReplicaConfig>& shapes);

// InputError naming the key for a layout no replica program runs: replicas of
// different shapes or compression under all_reduce, context degrees that
// differ, a stage without a layer, a sparse weight sync, a batch the replicas
// cannot share.
void check_replicas(const Scenario& scenario);

// The scenario replica `replica` runs: one replica, its ranks on its own nodes,
// its stages (parallel.stage_layers where it has that many stages, else the
// near-even split: the first layers % pipeline stages one layer more), its
// boundaries dense unless it compresses them, batch_size / R sequences.
Scenario replica_scenario(const Scenario& scenario, int replica);

// What diloco / sparseloco synchronise: the common parts (data/parts.h) of every
// replica's stages. The trainer holds one OuterSync per part a rank's stage holds,
// and the estimate's graph one dry exchange per holder.
// They lie each in one of parallel.data_sync.fragments (sync/sync_period.h): its number.
std::vector<ModelPart> replica_parts(const Scenario& scenario);
int part_fragment(const Scenario& scenario, const ModelPart& part);

// Whether the rank at `at` (its replica's stage) holds all of `part`: the outer
// sync's groups, the trainer's and the estimate's alike.
bool holds_part(const Scenario& scenario, const RankPlace& at, const ModelPart& part);

}  // namespace lowband::parallel
