// Pipeline parallelism's keys: the stages (parallel.stage_layers, microbatches,
// schedule), what crosses a stage boundary (compression.boundary), and the checks
// that tie them to the model, the batch and each other.
#include <algorithm>
#include <numeric>

#include "runtime/scenario/fields.h"
#include "runtime/scenario/parse_internal.h"

namespace lowband::scenario_detail {

void parse_stages(const ObjectReader& r, ParallelConfig& p) {
  if (r.has("stage_layers")) {
    const std::string path = r.path_of("stage_layers");
    const json& a = as_array(r.need("stage_layers"), path);
    if (a.empty() || a.size() > size_t(kMaxNodes))
      fail(path, "expected 1.." + std::to_string(kMaxNodes) + " layer counts, one per stage");
    for (size_t i = 0; i < a.size(); ++i) {
      const std::string at = join_path(path, std::to_string(i));
      const int64_t layers = as_integer(a[i], at, -kMaxInt, kMaxInt);
      if (layers < 1) fail(at, "a stage with no layer (" + std::to_string(layers) + "): expected >= 1");
      p.stage_layers.push_back(int(layers));
    }
  }
}

BoundaryConfig parse_boundary(const ObjectReader& compression) {
  if (!compression.has("boundary")) return {};
  const fields::Section& table = fields::section("compression.boundary");
  const ObjectReader r = compression.object("boundary", table.keys());
  Scenario read;
  fields::read_generic(table, r, read);  // a key of another method is an error there
  const BoundaryConfig b = read.compression.boundary;
  const bool basis = b.method == BoundaryMethod::subspace || b.method == BoundaryMethod::lowrank ||
                     b.method == BoundaryMethod::embedding_residual;
  if (basis && !r.has("rank"))
    fail(r.path(), "method \"" + r.choice_or("method", "none", table.field("method").choices) +
                       "\" needs rank (the basis' columns, 1..model.d_model)");  // <= d_model: check_pipeline
  if (b.quantize_bits != 4 && b.quantize_bits != 8)
    fail(r.path_of("bits"), "expected 4 or 8, got " + std::to_string(b.quantize_bits));
  return b;
}

void check_pipeline(const Scenario& s) {
  const ParallelConfig& p = s.parallel;
  const int layers = s.model.layers;
  const std::string stages = std::to_string(p.pipeline) + (p.pipeline == 1 ? " stage" : " stages");
  if (p.pipeline > layers)
    fail("parallel.pipeline", stages + " but model.layers is " + std::to_string(layers) + ": every stage needs a layer",
         {"model.layers"});
  if (p.stage_layers.empty()) {
    if (layers % p.pipeline != 0)
      fail("parallel.pipeline", "model.layers " + std::to_string(layers) + " does not split evenly into " + stages +
                                    ": give parallel.stage_layers (the layers of each stage)",
           {"model.layers", "parallel.stage_layers"});
  } else {
    if (int64_t(p.stage_layers.size()) != p.pipeline)
      fail("parallel.stage_layers", std::to_string(p.stage_layers.size()) + " entries for " + stages +
                                        " (one layer count per stage)", {"parallel.pipeline"});
    const int64_t sum = std::accumulate(p.stage_layers.begin(), p.stage_layers.end(), int64_t{0});
    if (sum != layers)
      fail("parallel.stage_layers", "the stages hold " + std::to_string(sum) + " layers but model.layers is " +
                                        std::to_string(layers), {"model.layers"});
  }
  if (s.training.batch_size % p.microbatches != 0)
    fail("parallel.microbatches", std::to_string(p.microbatches) + " microbatches do not divide training.batch_size " +
                                      std::to_string(s.training.batch_size), {"training.batch_size"});

  const BoundaryConfig& b = s.compression.boundary;
  if (b.method == BoundaryMethod::none) return;
  int deepest = p.pipeline;  // heterogeneous replicas: boundaries where any replica has stages
  for (const ReplicaConfig& replica : p.replicas) deepest = std::max(deepest, replica.pipeline);
  if (deepest == 1)
    fail("compression.boundary.method", "no stage boundary to compress: parallel.pipeline is 1", {"parallel.pipeline"});
  if (b.rank > s.model.d_model)
    fail("compression.boundary.rank", "rank " + std::to_string(b.rank) + " exceeds model.d_model " +
                                          std::to_string(s.model.d_model), {"model.d_model"});
  // The subspace message rebuilds x from the frozen embedding table; a tied LM head
  // would train that table.
  if (b.method == BoundaryMethod::subspace && s.model.tie_embeddings)
    fail("compression.boundary.method", "\"subspace\" needs a frozen embedding table, but model.tie_embeddings is "
                                        "true (the tied LM head trains it): set it false or use \"lowrank\"",
         {"model.tie_embeddings"});
}

}  // namespace lowband::scenario_detail
