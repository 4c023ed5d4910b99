#include "runtime/parallel/data/step_graph.h"

#include <algorithm>
#include <string>
#include <utility>

#include "comm/null.h"
#include "comm/recording.h"
#include "common/error.h"
#include "runtime/model/param_layout.h"
#include "runtime/parallel/context/costs.h"
#include "runtime/parallel/data/replicas.h"
#include "runtime/parallel/dry_run.h"
#include "runtime/parallel/layout.h"
#include "runtime/parallel/pipeline/step_graph.h"
#include "runtime/sync/chunks.h"
#include "runtime/sync/outer_sync.h"
#include "runtime/sync/pack.h"

namespace lowband::parallel {

namespace {

// Communicators of the data sync, numbered apart from every replica's own.
constexpr int kDataGroupComm = 1 << 20, kFirstPartComm = kDataGroupComm + 1;

// Replica q (`one`) run dry (dry_run.h: its ranks' own programs) into the
// world's logs: its ranks firsts[q].., on the replica's communicator (0);
// synchronous, each also in the data group of its index (the same index of
// every replica).
void dry_replica(const Scenario& one, int q, const std::vector<int>& firsts, bool synchronous,
                 std::vector<comm::RankLog>& logs) {
  const int n = one.parallel.pipeline * one.parallel.context, R = int(firsts.size());
  const int step = steady_step(one, /*weight_sync_step=*/true);
  DryGroup replica{{}, 0};
  for (int i = 0; i < n; ++i) replica.ranks.push_back(firsts[size_t(q)] + i);
  for (int i = 0; i < n; ++i) {
    DryGroup data{{}, kDataGroupComm};
    for (int p = 0; p < R; ++p) data.ranks.push_back(firsts[size_t(p)] + i);
    comm::RankLog& log = logs[size_t(replica.ranks[size_t(i)])];
    if (one.parallel.pipeline > 1) dry_pipeline_rank(one, i, step, replica, log, synchronous ? &data : nullptr, q);
    else dry_context_rank(one, i, step, replica, log, synchronous ? &data : nullptr, q);
  }
}

std::string describe(const Scenario& one) {
  const ParallelConfig& p = one.parallel;
  const std::string context = std::to_string(p.context) + " context ranks";
  if (p.pipeline == 1) return p.context > 1 ? context : "1 node";
  return std::to_string(p.pipeline) + " stages" + (p.context > 1 ? " x " + context : "") +
         (one.compression.boundary.method != BoundaryMethod::none ? ", boundaries compressed" : "");
}

}  // namespace

double outer_message_bytes(const ModelConfig& model, const DataSyncConfig& sync, const ModelPart& part) {
  const model::ParamLayout layout(model, part.span());
  if (sync.method == DataSyncMethod::diloco) return double(sizeof(float)) * double(layout.count());
  return double(sync::packed_bytes(layout.tensors(), sync.chunk, {sync.topk_per_chunk, sync.value_bits}));
}

DataStepGraph build_data_parallel(const Scenario& s, bool outer_sync) {
  model::check_model_config(s.model);
  check_replicas(s);
  const std::vector<ReplicaConfig> shapes = replica_shapes(s.parallel);
  const std::vector<int> firsts = replica_first_ranks(shapes);
  const int R = int(shapes.size()), N = s.parallel.ranks();
  if (s.network.nodes < N && s.parallel.placement.empty())
    throw InputError("network.nodes", std::to_string(s.network.nodes) + " nodes for " + std::to_string(N) + " ranks");
  const bool synchronous = s.parallel.data_sync.method == DataSyncMethod::all_reduce;
  const Layout layout(s.parallel);
  DataStepGraph out;
  out.tokens = double(s.training.batch_size) * double(s.model.seq_len);
  std::vector<comm::RankLog> logs(static_cast<size_t>(N));
  std::vector<Scenario> ones;
  for (int q = 0; q < R; ++q) {
    ones.push_back(replica_scenario(s, q));
    const Scenario& one = ones.back();
    out.replica_shapes.push_back(describe(one));
    // The figures first: they validate a pipeline replica's keys before its ranks run.
    out.model_flops += one.parallel.pipeline > 1 ? pipeline_step_figures(one).model_flops
                                                 : ContextCosts(one).step_model_flops();
    dry_replica(one, q, firsts, synchronous, logs);
  }
  if (!synchronous) {
    out.parts = replica_parts(s);
    for (const ModelPart& part : out.parts) out.part_message_bytes.push_back(outer_message_bytes(s.model, s.parallel.data_sync, part));
  }
  if (outer_sync && !synchronous) {
    const int C = shapes.front().context;
    // The outer step's compute around its collectives, as LayoutTrainer::outer_step
    // logs it: each part's message and deferred collective, in part order; the
    // join; each part's update.
    const auto span = [&](int r, const cost::Cost& c) {
      logs[size_t(r)].compute(cost::node_seconds(s, layout.node_of(r), c, "outer_sync"), "outer_sync");
    };
    std::vector<std::vector<int64_t>> held(static_cast<size_t>(N));  // per rank: the sizes of its parts, in order
    for (size_t p = 0; p < out.parts.size(); ++p) {
      const model::ParamLayout part(s.model, out.parts[p].span());
      for (int c = 0; c < C; ++c) {
        // Holders of part p at context index c, in world rank order (the trainer's split).
        DryGroup group{{}, kFirstPartComm + int(p) * C + c};
        for (int r = 0; r < N; ++r)
          if (layout.place(r).context_rank == c && holds_part(s, layout.place(r), out.parts[p])) group.ranks.push_back(r);
        for (size_t i = 0; i < group.ranks.size(); ++i) {  // each holder's OuterSync, dry
          const int r = group.ranks[i];
          comm::NullCommunicator null(int(i), int(group.ranks.size()));
          comm::RecordingCommunicator comm(null, logs[size_t(r)], group.ranks, group.comm_id);
          span(r, sync::OuterSync::before_exchange_cost(s.parallel.data_sync, part.count()));
          sync::OuterSync::exchange_sizes(comm, s.parallel.data_sync, part, /*deferred=*/true);
          held[size_t(r)].push_back(part.count());
        }
      }
    }
    for (int r = 0; r < N; ++r) {
      logs[size_t(r)].join_deferred();
      for (int64_t elements : held[size_t(r)]) span(r, sync::OuterSync::after_exchange_cost(s.parallel.data_sync, elements));
    }
    // Replicas whose boundaries centre on the embedding take its new snapshot.
    const int snapshot_comms = kFirstPartComm + int(out.parts.size()) * C;
    for (int q = 0; q < R; ++q) dry_embedding_snapshot(ones[size_t(q)], firsts[size_t(q)], snapshot_comms + q * C, logs);
  }
  std::vector<const comm::RankLog*> views;
  for (const auto& log : logs) views.push_back(&log);
  out.graph = place_on_nodes(comm::assemble_step_graph(views, s.parallel.all_reduce), layout);
  return out;
}

}  // namespace lowband::parallel
