#include "runtime/parallel/context/step_graph.h"

#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/parallel/context/costs.h"
#include "runtime/parallel/dry_run.h"

namespace lowband::parallel {

void check_context_parallel(const Scenario& s) {
  const auto& m = s.model;
  const int P = s.parallel.context;
  if (P < 1) throw InputError("parallel.context", "must be at least 1");
  if (s.parallel.pipeline != 1)
    throw InputError("parallel.pipeline", "estimate models context parallelism only (expected 1)");
  if (s.parallel.data != 1)
    throw InputError("parallel.data", "estimate models context parallelism only (expected 1)");
  if (m.layers < 1) throw InputError("model.layers", "must be at least 1");
  if (m.heads < 1 || m.d_model % m.heads != 0)
    throw InputError("model.heads", "must divide model.d_model");
  if (m.kv_heads < 1 || m.heads % m.kv_heads != 0)
    throw InputError("model.kv_heads", "must divide model.heads");
  const int64_t chunks = s.parallel.split == CpSplit::zigzag ? 2LL * P : P;
  if (m.seq_len < chunks)
    throw InputError("model.seq_len", "fewer tokens (" + std::to_string(m.seq_len) + ") than the " +
                                          std::to_string(chunks) + " context-parallel chunks");
  if (s.network.nodes < P)
    throw InputError("network.nodes", std::to_string(s.network.nodes) + " nodes for " +
                                          std::to_string(P) + " context-parallel ranks");
  if (s.training.batch_size < 1) throw InputError("training.batch_size", "must be at least 1");
}

ContextStep build_context_parallel(const Scenario& s, bool weight_sync_step) {
  check_context_parallel(s);
  ContextStep out;
  out.graph = dry_context_step(s, steady_step(s, weight_sync_step));
  const ContextCosts costs(s);
  out.tokens = double(s.training.batch_size) * double(s.model.seq_len);
  out.model_flops = costs.step_model_flops();
  out.uncompressed_kv_bytes = costs.uncompressed_kv_bytes();
  return out;
}

sim::StepGraph build_context_parallel_step(const Scenario& scenario, bool weight_sync_step) {
  return build_context_parallel(scenario, weight_sync_step).graph;
}

}  // namespace lowband::parallel
