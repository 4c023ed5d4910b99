#include "runtime/parallel/dry_run.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "comm/null.h"
#include "comm/recording.h"
#include "kernels/backend.h"
#include "runtime/compress/dry_codec.h"
#include "runtime/parallel/context/rank.h"
#include "runtime/parallel/layout.h"
#include "runtime/parallel/pipeline/rank.h"
#include "runtime/parallel/rank_program.h"
#include "runtime/sync/sync_period.h"

namespace lowband::parallel {

int steady_step(const Scenario& s, bool weight_sync_step) {
  const int every = sync::sync_period_steps(s);
  const int warmup = s.compression.method == CompressionMethod::none ? 0 : s.compression.warmup_steps;
  const int first = (warmup + every - 1) / every * every;  // the first period that compresses throughout
  // sync::syncs_at: the last step of each period syncs.
  return weight_sync_step || every == 1 ? first + every - 1 : first;
}

namespace {

// What a dry rank talks through in one group: the recording communicator over a
// null transport, as rank `rank` of `group`.
struct DryComm {
  DryComm(const DryGroup& group, int rank, comm::RankLog& log)
      : null(rank, int(group.ranks.size())), recording(null, log, group.ranks, group.comm_id) {}
  comm::NullCommunicator null;
  comm::RecordingCommunicator recording;
};

// With `data` (synchronous data parallelism) the rank's data group and the
// DataStep that sums its gradient buckets over it; else neither.
struct DryData {
  DryData(const DryGroup* data, int data_rank, int64_t tokens, comm::RankLog& log) {
    if (!data) return;
    comm.emplace(*data, data_rank, log);
    step = DataStep{&comm->recording, tokens * int64_t(data->ranks.size())};
  }
  const DataStep* get() const { return step ? &*step : nullptr; }
  std::optional<DryComm> comm;
  std::optional<DataStep> step;
};

}  // namespace

void dry_context_rank(const Scenario& replica, int c, int step, const DryGroup& group, comm::RankLog& log,
                      const DryGroup* data, int data_rank) {
  // Token 0 everywhere, every target valid: the batch's shape is all a dry rank reads.
  const int sequences = replica.training.batch_size;
  const std::vector<int32_t> tokens(size_t(sequences) * size_t(replica.model.seq_len), 0);
  DryComm comm(group, c, log);
  const DryData in_data(data, data_rank, int64_t(tokens.size()), log);
  ContextRank rank(replica, c, compress::make_kv_codec_on(replica, kernels::Device::dry),
                   kernels::backend(kernels::Device::dry), ComputeTiming::profile, log);
  rank.train_step(comm.recording, step, tokens.data(), tokens.data(), sequences, in_data.get());
}

void dry_pipeline_rank(const Scenario& replica, int rank, int step, const DryGroup& world, comm::RankLog& log,
                       const DryGroup* data, int data_rank) {
  const Layout layout(replica.parallel);  // the replica's own: rank = its index in the replica
  const int C = replica.parallel.context, P = replica.parallel.pipeline;
  const int stage = layout.place(rank).stage, c = layout.place(rank).context_rank;
  const int sequences = replica.training.batch_size;
  const std::vector<int32_t> tokens(size_t(sequences) * size_t(replica.model.seq_len), 0);
  PipelineRank program(replica, stage, c, kernels::backend(kernels::Device::dry), ComputeTiming::profile, log);
  // C > 1: the groups PipelineRank splits off, numbered as the world numbers its splits.
  DryGroup pipeline{{}, world.comm_id + 1}, context{{}, world.comm_id + 2};
  for (int st = 0; st < P; ++st) pipeline.ranks.push_back(world.ranks[size_t(layout.rank_at(0, st, c))]);
  for (int k = 0; k < C; ++k) context.ranks.push_back(world.ranks[size_t(layout.rank_at(0, stage, k))]);
  DryComm world_comm(world, rank, log), pipeline_comm(pipeline, stage, log), context_comm(context, c, log);
  const PipelineRank::Groups groups =
      C == 1 ? PipelineRank::Groups{world_comm.recording, world_comm.recording, nullptr}
             : PipelineRank::Groups{world_comm.recording, pipeline_comm.recording, &context_comm.recording};
  const DryData in_data(data, data_rank, int64_t(tokens.size()), log);
  program.train_step(groups, step, tokens.data(), tokens.data(), sequences, in_data.get());
}

void dry_embedding_snapshot(const Scenario& replica, int first, int comm_id, std::vector<comm::RankLog>& logs) {
  const ParallelConfig& p = replica.parallel;
  if (p.pipeline == 1 || replica.compression.boundary.method != BoundaryMethod::embedding_residual) return;
  const Layout layout(p);
  for (int c = 0; c < p.context; ++c) {
    DryGroup pipeline{{}, comm_id + c};
    for (int st = 0; st < p.pipeline; ++st) pipeline.ranks.push_back(first + layout.rank_at(0, st, c));
    for (int st = 0; st < p.pipeline; ++st) {
      DryComm comm(pipeline, st, logs[size_t(pipeline.ranks[size_t(st)])]);
      broadcast_embedding_table(comm.recording, replica.model, nullptr);
    }
  }
}

sim::StepGraph dry_context_step(const Scenario& s, int step) {
  const int C = s.parallel.context;
  DryGroup replica;  // the world, communicator 0
  for (int c = 0; c < C; ++c) replica.ranks.push_back(c);
  std::vector<comm::RankLog> logs(static_cast<size_t>(C));
  for (int c = 0; c < C; ++c) dry_context_rank(s, c, step, replica, logs[size_t(c)]);  // one at a time
  std::vector<const comm::RankLog*> views;
  for (const comm::RankLog& log : logs) views.push_back(&log);
  sim::StepGraph graph = comm::assemble_step_graph(views, s.parallel.all_reduce);
  if (!s.parallel.placement.empty()) graph = place_on_nodes(graph, Layout(s.parallel));
  return graph;
}

}  // namespace lowband::parallel
