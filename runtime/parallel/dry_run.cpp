#include "runtime/parallel/dry_run.h"

#include <algorithm>
#include <vector>

#include "comm/null.h"
#include "comm/recording.h"
#include "kernels/backend.h"
#include "runtime/compress/dry_codec.h"
#include "runtime/parallel/context_rank.h"
#include "runtime/parallel/layout.h"

namespace lowband::parallel {

int steady_step(const Scenario& s, bool weight_sync_step) {
  const int every = s.compression.weight_sync == WeightSync::sparse ? std::max(1, s.compression.sync_every) : 1;
  const int warmup = s.compression.method == CompressionMethod::mos ? s.compression.warmup_steps : 0;
  const int first = (warmup + every - 1) / every * every;  // the first period that compresses throughout
  // ReplicaSync::syncs_at: the last step of each period syncs.
  return weight_sync_step || every == 1 ? first + every - 1 : first;
}

sim::StepGraph dry_context_step(const Scenario& s, int step) {
  const int C = s.parallel.context;
  const kernels::Backend& dry = kernels::backend(kernels::Device::dry);
  // Token 0 everywhere, every target valid: the batch's shape is all a dry rank reads.
  const std::vector<int32_t> tokens(size_t(s.training.batch_size) * size_t(s.model.seq_len), 0);
  std::vector<comm::RankLog> logs(static_cast<size_t>(C));
  for (int c = 0; c < C; ++c) {  // one at a time: only its log outlives it
    comm::NullCommunicator null(c, C);
    comm::RecordingCommunicator comm(null, logs[size_t(c)]);
    ContextRank rank(s, c, compress::make_dry_kv_codec(s), dry, ComputeTiming::profile, logs[size_t(c)]);
    rank.train_step(comm, step, tokens.data(), tokens.data(), s.training.batch_size);
  }
  std::vector<const comm::RankLog*> views;
  for (const comm::RankLog& log : logs) views.push_back(&log);
  sim::StepGraph graph = comm::assemble_step_graph(views);
  if (!s.parallel.placement.empty()) graph = place_on_nodes(graph, Layout(s.parallel));
  return graph;
}

}  // namespace lowband::parallel
