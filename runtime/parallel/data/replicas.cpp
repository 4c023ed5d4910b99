#include "runtime/parallel/data/replicas.h"

#include <string>

#include "common/error.h"
#include "runtime/parallel/layout.h"
#include "runtime/scenario/layout_check.h"
#include "runtime/sync/sync_period.h"

namespace lowband::parallel {
namespace {

// Layers per stage: the even split, the first layers % pipeline stages one more.
std::vector<int> near_even_stages(int layers, int pipeline) {
  if (layers % pipeline == 0) return {};  // the scenario's own even split
  std::vector<int> out;
  for (int s = 0; s < pipeline; ++s) out.push_back(layers / pipeline + (s < layers % pipeline ? 1 : 0));
  return out;
}

}  // namespace

std::vector<int> replica_first_ranks(const std::vector<ReplicaConfig>& shapes) {
  std::vector<int> out;
  int rank = 0;
  for (const ReplicaConfig& r : shapes) out.push_back(rank), rank += r.pipeline * r.context;
  return out;
}

// The checks live with the scenario's (loading runs them too): one place.
void check_replicas(const Scenario& s) {
  check_layout(s);
  const int F = s.parallel.data_sync.fragments;
  if (F > s.model.layers)
    throw InputError("parallel.data_sync.fragments", std::to_string(F) + " fragments of " +
                                                         std::to_string(s.model.layers) +
                                                         " layers (model.layers): a fragment is one or more whole layers");
  const DataSyncConfig& d = s.parallel.data_sync;
  const int R = int(replica_shapes(s.parallel).size());
  if (d.quorum > R)
    throw InputError("parallel.data_sync.quorum",
                     std::to_string(d.quorum) + " replicas of " + std::to_string(R) + ": expected 1.." + std::to_string(R));
  // A round's steps are timed together when it closes, and a checkpoint follows a flush.
  const int every = s.training.checkpoint_every;
  if (d.partial_participation() && every > 0 && every % d.inner_steps != 0)
    throw InputError("training.checkpoint_every",
                     std::to_string(every) + " steps: with partial participation a checkpoint falls where a round "
                                             "closes, a multiple of parallel.data_sync.inner_steps (" +
                         std::to_string(d.inner_steps) + ")");
}

Scenario replica_scenario(const Scenario& s, int replica) {
  const std::vector<ReplicaConfig> shapes = replica_shapes(s.parallel);
  const ReplicaConfig& shape = shapes.at(size_t(replica));
  const int first = replica_first_ranks(shapes)[size_t(replica)];
  const Layout layout(s.parallel);
  Scenario one = s;
  one.parallel.data = 1, one.parallel.replicas.clear();
  one.parallel.pipeline = shape.pipeline, one.parallel.context = shape.context;
  if (int(one.parallel.stage_layers.size()) != shape.pipeline)
    one.parallel.stage_layers = near_even_stages(s.model.layers, shape.pipeline);
  if (!shape.compress_boundaries) one.compression.boundary = BoundaryConfig{};
  one.training.batch_size = s.training.batch_size / int(shapes.size());
  one.parallel.placement.clear();
  for (int i = 0; i < shape.pipeline * shape.context; ++i) one.parallel.placement.push_back(layout.node_of(first + i));
  return one;
}

std::vector<ModelPart> replica_parts(const Scenario& s) {
  std::vector<std::vector<int>> stage_firsts;
  for (int q = 0; q < int(replica_shapes(s.parallel).size()); ++q) {
    const Scenario one = replica_scenario(s, q);
    stage_firsts.emplace_back();
    for (int st = 0; st < one.parallel.pipeline; ++st)
      stage_firsts.back().push_back(one.parallel.stage_first_layer(st, s.model.layers));
  }
  // Streaming DiLoCo's fragments cut the model too: a part lies in one fragment.
  stage_firsts.emplace_back();
  for (int f = 0; f < s.parallel.data_sync.fragments; ++f)
    stage_firsts.back().push_back(sync::fragment_first_layer(s.parallel.data_sync, s.model.layers, f));
  return common_parts(stage_firsts, s.model.layers);
}

int part_fragment(const Scenario& s, const ModelPart& part) {
  int f = 0;
  while (f + 1 < s.parallel.data_sync.fragments &&
         sync::fragment_first_layer(s.parallel.data_sync, s.model.layers, f + 1) <= part.first_layer)
    ++f;
  return f;
}

bool holds_part(const Scenario& s, const RankPlace& at, const ModelPart& part) {
  const Scenario one = replica_scenario(s, at.replica);
  const int first = one.parallel.stage_first_layer(at.stage, s.model.layers);
  return part.within(first, first + one.parallel.stage_layer_count(at.stage, s.model.layers));
}

}  // namespace lowband::parallel
