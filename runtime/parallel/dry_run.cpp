#include "runtime/parallel/dry_run.h"

#include <algorithm>
#include <vector>

#include "comm/null.h"
#include "comm/recording.h"
#include "kernels/backend.h"
#include "runtime/compress/dry_codec.h"
#include "runtime/parallel/context_rank.h"
#include "runtime/parallel/layout.h"
#include "runtime/parallel/rank_program.h"

namespace lowband::parallel {

int steady_step(const Scenario& s, bool weight_sync_step) {
  const int every = s.compression.weight_sync == WeightSync::sparse ? std::max(1, s.compression.sync_every) : 1;
  const int warmup = s.compression.method == CompressionMethod::mos ? s.compression.warmup_steps : 0;
  const int first = (warmup + every - 1) / every * every;  // the first period that compresses throughout
  // ReplicaSync::syncs_at: the last step of each period syncs.
  return weight_sync_step || every == 1 ? first + every - 1 : first;
}

void dry_context_rank(const Scenario& replica, int c, int step, const DryGroup& group, comm::RankLog& log,
                      const DryGroup* data, int data_rank) {
  // Token 0 everywhere, every target valid: the batch's shape is all a dry rank reads.
  const int sequences = replica.training.batch_size;
  const std::vector<int32_t> tokens(size_t(sequences) * size_t(replica.model.seq_len), 0);
  comm::NullCommunicator null(c, int(group.ranks.size()));
  comm::RecordingCommunicator comm(null, log, group.ranks, group.comm_id);
  ContextRank rank(replica, c, compress::make_dry_kv_codec(replica), kernels::backend(kernels::Device::dry),
                   ComputeTiming::profile, log);
  if (!data) {
    rank.train_step(comm, step, tokens.data(), tokens.data(), sequences);
    return;
  }
  comm::NullCommunicator null_data(data_rank, int(data->ranks.size()));
  comm::RecordingCommunicator data_comm(null_data, log, data->ranks, data->comm_id);
  const DataStep both{&data_comm, int64_t(tokens.size()) * int64_t(data->ranks.size())};
  rank.train_step(comm, step, tokens.data(), tokens.data(), sequences, &both);
}

sim::StepGraph dry_context_step(const Scenario& s, int step) {
  const int C = s.parallel.context;
  DryGroup replica;  // the world, communicator 0
  for (int c = 0; c < C; ++c) replica.ranks.push_back(c);
  std::vector<comm::RankLog> logs(static_cast<size_t>(C));
  for (int c = 0; c < C; ++c) dry_context_rank(s, c, step, replica, logs[size_t(c)]);  // one at a time
  std::vector<const comm::RankLog*> views;
  for (const comm::RankLog& log : logs) views.push_back(&log);
  sim::StepGraph graph = comm::assemble_step_graph(views);
  if (!s.parallel.placement.empty()) graph = place_on_nodes(graph, Layout(s.parallel));
  return graph;
}

}  // namespace lowband::parallel
