// check_layout: what the trainers (runtime/parallel/) and estimates can run,
// said once. Errors are SchemaErrors inside parse_document (a --set of a
// blamed key names its flag), InputErrors for callers outside.
#include "runtime/scenario/layout_check.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/scenario/parse_internal.h"

namespace lowband::scenario_detail {
namespace {

std::string replica_path(size_t q) { return "parallel.replicas." + std::to_string(q); }

// Whether some replica has more than one pipeline stage.
bool has_stages(const ParallelConfig& p) {
  return p.pipeline > 1 ||
         std::any_of(p.replicas.begin(), p.replicas.end(), [](const ReplicaConfig& r) { return r.pipeline > 1; });
}

// Keys that would have no effect in this layout: refused rather than ignored.
void check_keys_in_effect(const Scenario& s) {
  const ParallelConfig& p = s.parallel;
  const CompressionConfig& c = s.compression;
  // Only context-parallel ranks exchange K/V, and only they sync weights other
  // than by all_reduce (replicas all have the first one's context degree).
  if (p.context == 1 && c.method != CompressionMethod::none)
    fail("compression.method", "compresses the K/V that context-parallel ranks exchange, but parallel.context is 1 "
                               "(nothing to compress): use method \"none\" or more context ranks",
         {"parallel.context", "parallel.replicas"});
  if (p.context == 1 && c.weight_sync != WeightSync::all_reduce)
    fail("compression.weight_sync", std::string(weight_sync_name(c.weight_sync)) +
                                        " syncs context-parallel ranks, but parallel.context is 1 (nothing to sync): "
                                        "expected \"all_reduce\"",
         {"parallel.context", "parallel.pipeline", "parallel.replicas"});
  // Microbatches are a pipeline's, or the sequences a context rank keeps in flight.
  const bool staged = has_stages(p);
  if (p.microbatches > 1 && !staged && p.context == 1)
    fail("parallel.microbatches", "splits a step over pipeline stages, or keeps several sequences in flight per "
                                  "context-parallel rank, but parallel.pipeline and parallel.context are 1: "
                                  "expected 1", {"parallel.pipeline", "parallel.context", "parallel.replicas"});
  // Each slot's K/V messages have tags of their own (context/attention.h): 2 per
  // slot and layer, within the 32767 every MPI library allows.
  if (p.context > 1 && 2LL * p.microbatches * s.model.layers > 32767)
    fail("parallel.microbatches", std::to_string(p.microbatches) + " microbatches of " +
                                      std::to_string(s.model.layers) + " layers need " +
                                      std::to_string(2LL * p.microbatches * s.model.layers) +
                                      " message tags with context parallelism; at most 32767",
         {"model.layers", "parallel.context"});
  // compress_boundaries selects which replicas' stage boundaries compression.boundary codes.
  for (size_t q = 0; q < p.replicas.size(); ++q) {
    const ReplicaConfig& r = p.replicas[q];
    if (!r.compress_boundaries) continue;
    const std::string path = replica_path(q) + ".compress_boundaries";
    if (c.boundary.method == BoundaryMethod::none)
      fail(path, "compression.boundary.method is \"none\": no codec to apply to this replica's boundaries",
           {"compression.boundary.method"});
    if (r.pipeline == 1)
      fail(path, "the replica has one stage: no stage boundary to compress", {replica_path(q) + ".pipeline"});
  }
}

void check_pipeline_layout(const Scenario& s) {
  int deepest = s.parallel.pipeline;
  for (const ReplicaConfig& r : s.parallel.replicas) deepest = std::max(deepest, r.pipeline);
  // A stage holds the embedding or the LM head, not both (model/param_layout.h).
  if (deepest > 1 && s.model.tie_embeddings)
    fail("model.tie_embeddings", "a tied LM head is the embedding, but pipeline stages split them: set it false "
                                 "for pipeline parallelism", {"parallel.pipeline", "parallel.replicas"});
  // A stage's context ranks sync its weights by compression.weight_sync, as a
  // context-only replica's do (check_keys_in_effect and check_layout_schema: not
  // with context 1, nor with data replicas).
}

void check_each_replica(const Scenario& s, const std::vector<ReplicaConfig>& shapes) {
  const bool synchronous = s.parallel.data_sync.method == DataSyncMethod::all_reduce;
  const ReplicaConfig& first = shapes.front();
  for (size_t q = 0; q < shapes.size(); ++q) {
    const ReplicaConfig& r = shapes[q];
    const std::string path = replica_path(q);
    if (r.pipeline > s.model.layers)
      fail(path + ".pipeline", std::to_string(r.pipeline) + " stages but model.layers is " +
                                   std::to_string(s.model.layers) + ": every stage needs a layer", {"model.layers"});
    if (synchronous && (r.pipeline != first.pipeline || r.context != first.context))
      fail(path, "synchronous all_reduce sums every step's gradients stage by stage: replicas of different shapes "
                 "need parallel.data_sync.method diloco or sparseloco (every replica " +
                     std::to_string(first.pipeline) + " stages x " + std::to_string(first.context) +
                     " context ranks, like the first, otherwise)", {"parallel.data_sync.method"});
    if (synchronous && r.compress_boundaries != first.compress_boundaries)
      fail(path + ".compress_boundaries", "selective boundary compression needs parallel.data_sync.method diloco or "
                                          "sparseloco (under all_reduce every replica alike)",
           {"parallel.data_sync.method"});
  }
}

}  // namespace

void check_replica_contexts(const Scenario& s) {
  const std::vector<ReplicaConfig>& replicas = s.parallel.replicas;
  for (size_t q = 1; q < replicas.size(); ++q)
    if (replicas[q].context != replicas[0].context)
      fail(replica_path(q) + ".context",
           "context " + std::to_string(replicas[q].context) + ", but replica 0 has context " +
               std::to_string(replicas[0].context) + ": every replica needs the same context degree (each context "
               "rank syncs with the same context rank of the others)",
           {replica_path(0) + ".context", replica_path(0)});
}

// The keys of one dimension, in a layout without it (non-default values only: a
// resolved scenario.json writes every default). Of the whole scenario only: a
// replica's own scenario (parallel::replica_scenario) keeps the whole one's keys.
void check_dimension_keys_in_effect(const Scenario& s) {
  const ParallelConfig& p = s.parallel;
  const std::vector<ReplicaConfig> shapes = replica_shapes(p);
  const int replicas = int(shapes.size());
  const int context = shapes.front().context;  // every replica's (check_replica_contexts)
  const bool staged = has_stages(p);
  if (p.schedule != PipelineSchedule::one_f_one_b && !staged)
    fail("parallel.schedule", "orders the microbatches of pipeline stages, but no replica has more than one stage: "
                              "leave it out", {"parallel.pipeline", "parallel.replicas"});
  if (context == 1) {
    const std::string none = ", but parallel.context is 1 (no context-parallel ranks): leave it out";
    if (p.split != CpSplit::zigzag) fail("parallel.split", "splits each sequence over context-parallel ranks" + none, {"parallel.context"});
    if (p.exchange != CpExchange::ring) fail("parallel.exchange", "is how context-parallel ranks exchange K/V" + none, {"parallel.context"});
    if (!p.overlap) fail("parallel.overlap", "overlaps context-parallel ranks' K/V transfers with attention" + none, {"parallel.context"});
  }
  const DataSyncMethod method = p.data_sync.method;
  if (replicas <= 1 && method != DataSyncMethod::all_reduce)
    fail("parallel.data_sync.method", std::string(data_sync_method_name(method)) + " syncs data-parallel replicas, but "
         "there is one (parallel.data 1, no parallel.replicas): leave it out", {"parallel.data", "parallel.replicas"});
  // An all-reduce sums context ranks' weight gradients, and replicas' gradients
  // (all_reduce) or pseudo-gradients (diloco); sparseloco all-gathers.
  const bool all_reduces = context > 1 || (replicas > 1 && method != DataSyncMethod::sparseloco);
  if (p.all_reduce != sim::AllReduceAlgorithm::ring && !all_reduces)
    fail("parallel.all_reduce", "is the algorithm of the all-reduces between context ranks or data-parallel replicas "
                                "(all_reduce, diloco), but this layout runs none: leave it out",
         {"parallel.context", "parallel.data", "parallel.data_sync.method"});
  // What crosses the network in bytes_per_element: activations (context, pipeline)
  // and per-step gradients (synchronous replicas); outer syncs send float32.
  if (s.model.bytes_per_element != 2 && context == 1 && !staged &&
      !(replicas > 1 && method == DataSyncMethod::all_reduce))
    fail("model.bytes_per_element", "is the width of activations and gradients on the wire, but this layout sends "
                                    "neither (outer syncs send float32): leave it out",
         {"parallel.context", "parallel.pipeline", "parallel.data", "parallel.data_sync.method"});
}

void check_layout_schema(const Scenario& s) {
  check_replica_contexts(s);
  check_pipeline_layout(s);
  check_keys_in_effect(s);
  const ParallelConfig& p = s.parallel;
  if (p.data <= 1 && p.replicas.empty()) return;
  const std::vector<ReplicaConfig> shapes = replica_shapes(p);
  check_each_replica(s, shapes);
  // The weight syncs other than all_reduce exchange between a replica's context
  // ranks only; across replicas nothing would keep the weights together.
  if (s.compression.weight_sync != WeightSync::all_reduce)
    fail("compression.weight_sync", std::string(weight_sync_name(s.compression.weight_sync)) +
                                        " syncs context-parallel ranks only; data-parallel replicas sum their "
                                        "gradients (all_reduce)", {"parallel.data", "parallel.replicas"});
  if (s.training.batch_size % int(shapes.size()) != 0)
    fail("training.batch_size", std::to_string(s.training.batch_size) + " sequences do not split over " +
                                    std::to_string(shapes.size()) + " replicas", {"parallel.data", "parallel.replicas"});
  const int per_replica = s.training.batch_size / int(shapes.size());
  if (per_replica % p.microbatches != 0)
    fail("parallel.microbatches", std::to_string(p.microbatches) + " microbatches do not divide a replica's " +
                                      std::to_string(per_replica) + " sequences (training.batch_size / replicas)",
         {"training.batch_size", "parallel.data", "parallel.replicas"});
}

}  // namespace lowband::scenario_detail

namespace lowband {

std::vector<ReplicaConfig> replica_shapes(const ParallelConfig& p) {
  if (!p.replicas.empty()) return p.replicas;
  return std::vector<ReplicaConfig>(size_t(p.data), ReplicaConfig{p.pipeline, p.context, {}, true});
}

void check_layout(const Scenario& scenario) {
  try {
    scenario_detail::check_layout_schema(scenario);
  } catch (const scenario_detail::SchemaError& e) {
    const std::string what = e.what(), prefix = e.path() + ": ";
    throw InputError(e.path(), what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what);
  }
}

}  // namespace lowband
