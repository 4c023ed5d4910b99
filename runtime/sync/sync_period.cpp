#include "runtime/sync/sync_period.h"

#include <algorithm>

#include "runtime/scenario/layout_check.h"

namespace lowband::sync {

int sync_period_steps(const Scenario& s) {
  if (replica_shapes(s.parallel).size() > 1)
    return s.parallel.data_sync.method == DataSyncMethod::all_reduce ? 1 : std::max(1, s.parallel.data_sync.inner_steps);
  return weight_sync_period_steps(s);
}

bool issues_at(const DataSyncConfig& d, int step) {
  for (int f = 0; f < d.fragments; ++f)
    if (issues_at(d, f, step)) return true;
  return false;
}

bool merges_at(const DataSyncConfig& d, int step) {
  for (int f = 0; f < d.fragments; ++f)
    if (merges_at(d, f, step)) return true;
  return false;
}

bool outer_syncs(const Scenario& s) {
  return replica_shapes(s.parallel).size() > 1 && s.parallel.data_sync.method != DataSyncMethod::all_reduce;
}

bool syncs_at(const Scenario& s, int step) {
  return outer_syncs(s) ? issues_at(s.parallel.data_sync, step) : syncs_at(sync_period_steps(s), step);
}

int weight_sync_period_steps(const Scenario& s) {
  return s.compression.weight_sync == WeightSync::sparse ? std::max(1, s.compression.sync_every) : 1;
}

}  // namespace lowband::sync
