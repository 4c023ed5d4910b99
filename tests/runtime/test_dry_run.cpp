// A dry run of the context-parallel rank programs (runtime/parallel/dry_run.h):
// task for task the graph a profile-timed real step records, for every split,
// exchange, overlap, codec (warm-up and compressing steps) and weight sync.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/parallel/context_trainer.h"
#include "runtime/parallel/dry_run.h"
#include "runtime/scenario/load.h"
#include "tests/runtime/test_graph_support.h"

namespace lowband::parallel::test {
namespace {

Scenario small(const std::vector<std::string>& extra) {
  std::vector<std::string> sets = {"model.layers=2", "model.d_model=32", "model.heads=4", "model.kv_heads=2",
                                   "model.ffn_hidden=64", "model.seq_len=64", "network.nodes=8",
                                   "training.batch_size=2"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return builtin_scenario("default", sets);
}

using test_support::expect_same_tasks;

class DryRun : public ::testing::TestWithParam<std::vector<std::string>> {};

// Every step of a sync period past the codec's warm-up, and a warm-up step:
// the real ranks' profile-timed step, task for task.
TEST_P(DryRun, IsTheRecordedProfileTimedStep) {
  const Scenario s = small(GetParam());
  ContextTrainer cp(s, ComputeTiming::profile);
  std::vector<int32_t> in(size_t(s.training.batch_size * s.model.seq_len));
  for (size_t i = 0; i < in.size(); ++i) in[i] = int32_t((i * 37 + 11) % 256);
  const int warmup = s.compression.method == CompressionMethod::mos ? s.compression.warmup_steps : 0;
  const int every = s.compression.weight_sync == WeightSync::sparse ? s.compression.sync_every : 1;
  for (int step = 0; step < warmup + 2 * every; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const StepRecord rec = cp.train_step(step, in.data(), in.data(), s.training.batch_size);
    if (warmup > 0 && step == warmup) continue;  // the fit's all-reduce: not in a dry step (dry_codec.h)
    expect_same_tasks(dry_context_step(s, step), rec.graph);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, DryRun,
    ::testing::Values(
        std::vector<std::string>{"parallel.context=1"},
        std::vector<std::string>{"parallel.context=2", "parallel.exchange=all_gather"},
        std::vector<std::string>{"parallel.context=3", "model.seq_len=60", "parallel.split=contiguous",
                                 "parallel.exchange=all_gather", "parallel.overlap=false"},
        std::vector<std::string>{"parallel.context=4"},
        std::vector<std::string>{"parallel.context=4", "parallel.split=contiguous"},
        std::vector<std::string>{"parallel.context=4", "parallel.exchange=ring", "parallel.overlap=false"},
        std::vector<std::string>{"parallel.context=4", "parallel.placement=[7,2,5,0]"},
        std::vector<std::string>{"parallel.context=4", "compression.weight_sync=sparse", "compression.sync_every=2"},
        std::vector<std::string>{"parallel.context=4", "compression.weight_sync=sparse_grad"},
        std::vector<std::string>{"parallel.context=4", "compression.weight_sync=topk_grad"},
        std::vector<std::string>{"parallel.context=4", "compression.weight_sync=sparse_update"},
        std::vector<std::string>{"parallel.context=4", "compression.weight_sync=lowrank_grad"},
        std::vector<std::string>{"parallel.context=4", "compression.method=mos", "compression.k_rank=4",
                                 "compression.v_rank=4", "compression.warmup_steps=2"},
        std::vector<std::string>{"parallel.context=3", "model.seq_len=60", "parallel.exchange=all_gather",
                                 "compression.method=mos", "compression.k_rank=4", "compression.v_rank=2",
                                 "compression.rotation=fixed", "compression.warmup_steps=1"},
        std::vector<std::string>{"parallel.context=4", "parallel.split=contiguous", "compression.method=mos",
                                 "compression.k_rank=4", "compression.v_rank=4", "compression.warmup_steps=0",
                                 "compression.weight_sync=sparse", "compression.sync_every=3"},
        std::vector<std::string>{"parallel.context=2", "compression.method=topk", "compression.topk_fraction=0.1"},
        std::vector<std::string>{"parallel.context=4", "compression.method=quantize", "compression.bits=4"}));

}  // namespace
}  // namespace lowband::parallel::test
