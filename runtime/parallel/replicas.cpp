#include "runtime/parallel/replicas.h"

#include <string>

#include "common/error.h"
#include "runtime/parallel/layout.h"

namespace lowband::parallel {
namespace {

// Layers per stage: the even split, the first layers % pipeline stages one more.
std::vector<int> near_even_stages(int layers, int pipeline) {
  if (layers % pipeline == 0) return {};  // the scenario's own even split
  std::vector<int> out;
  for (int s = 0; s < pipeline; ++s) out.push_back(layers / pipeline + (s < layers % pipeline ? 1 : 0));
  return out;
}

std::string replica_key(size_t q) { return "parallel.replicas[" + std::to_string(q) + "]"; }

}  // namespace

std::vector<ReplicaConfig> replica_shapes(const ParallelConfig& p) {
  if (!p.replicas.empty()) return p.replicas;
  return std::vector<ReplicaConfig>(size_t(p.data), ReplicaConfig{p.pipeline, p.context, {}, true});
}

std::vector<int> replica_first_ranks(const std::vector<ReplicaConfig>& shapes) {
  std::vector<int> out;
  int rank = 0;
  for (const ReplicaConfig& r : shapes) out.push_back(rank), rank += r.pipeline * r.context;
  return out;
}

void check_replicas(const Scenario& s) {
  const std::vector<ReplicaConfig> shapes = replica_shapes(s.parallel);
  const bool synchronous = s.parallel.data_sync.method == DataSyncMethod::all_reduce;
  const ReplicaConfig& first = shapes.front();
  for (size_t q = 0; q < shapes.size(); ++q) {
    const ReplicaConfig& r = shapes[q];
    if (r.pipeline > s.model.layers)
      throw InputError(replica_key(q) + ".pipeline", std::to_string(r.pipeline) + " stages but model.layers is " +
                                                         std::to_string(s.model.layers) + ": every stage needs a layer");
    if (synchronous && (r.pipeline != first.pipeline || r.context != first.context))
      throw InputError(replica_key(q), "synchronous all_reduce sums every step's gradients stage by stage: replicas of "
                                       "different shapes need parallel.data_sync.method diloco or sparseloco (every "
                                       "replica " + std::to_string(first.pipeline) + " stages x " +
                                           std::to_string(first.context) + " context ranks, like the first, otherwise)");
    if (synchronous && r.compress_boundaries != first.compress_boundaries)
      throw InputError(replica_key(q) + ".compress_boundaries",
                       "selective boundary compression needs parallel.data_sync.method diloco or sparseloco "
                       "(under all_reduce every replica alike)");
    if (r.context != first.context)
      throw InputError(replica_key(q) + ".context", "replicas of different context degrees are not trained (each "
                                                    "context rank syncs with the same context rank of the others): " +
                                                        std::to_string(first.context) + ", like the first");
  }
  // The weight syncs other than all_reduce exchange between a replica's context
  // ranks only; across replicas nothing would keep the weights together.
  if (s.compression.weight_sync != WeightSync::all_reduce)
    throw InputError("compression.weight_sync", std::string(weight_sync_name(s.compression.weight_sync)) +
                                                    " syncs context-parallel ranks only; data-parallel replicas "
                                                    "sum their gradients (all_reduce)");
  if (s.training.batch_size % int(shapes.size()) != 0)
    throw InputError("training.batch_size", std::to_string(s.training.batch_size) + " sequences do not split over " +
                                                std::to_string(shapes.size()) + " replicas");
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

}  // namespace lowband::parallel
