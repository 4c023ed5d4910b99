// The trainer run dry (runtime/parallel/dry_steps.h) with context ranks:
// task for task the graph a profile-timed real step records, for every split,
// exchange, overlap, codec (warm-up and compressing steps) and weight sync; and
// at the MoS paper's scale (743M parameters) it allocates nothing of the model's size.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <vector>

#include "runtime/parallel/dry_steps.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/parallel/pipeline/costs.h"
#include "runtime/scenario/load.h"
#include "tests/runtime/test_graph_support.h"

namespace lowband::parallel::test {
namespace {

Scenario small(const std::vector<std::string>& extra) { return test_support::small_graph_scenario(extra); }

using test_support::expect_same_tasks;

class DryRun : public ::testing::TestWithParam<std::vector<std::string>> {};

// Every step of a sync period past the codec's warm-up, and a warm-up step:
// the real ranks' profile-timed step, task for task.
TEST_P(DryRun, IsTheRecordedProfileTimedStep) {
  const Scenario s = small(GetParam());
  LayoutTrainer cp(s, ComputeTiming::profile);
  std::vector<int32_t> in(size_t(s.training.batch_size * s.model.seq_len));
  for (size_t i = 0; i < in.size(); ++i) in[i] = int32_t((i * 37 + 11) % 256);
  const bool mos = s.compression.method == CompressionMethod::mos;
  const int warmup = s.compression.method == CompressionMethod::none ? 0 : s.compression.warmup_steps;
  const int every = s.compression.weight_sync == WeightSync::sparse ? s.compression.sync_every : 1;
  for (int step = 0; step < warmup + 2 * every; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const StepRecord rec = cp.train_step(step, in.data(), in.data(), s.training.batch_size);
    if (mos && warmup > 0 && step == warmup) continue;  // the fit's all-reduce: not in a dry step (dry_codec.h)
    expect_same_tasks(dry_step_graph(s, step), rec.graph);
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
                                 "compression.v_rank=4", "compression.warmup_steps=2",
                                 "compression.fit_during_lr_warmup=true"},
        std::vector<std::string>{"parallel.context=3", "model.seq_len=60", "parallel.exchange=all_gather",
                                 "compression.method=mos", "compression.k_rank=4", "compression.v_rank=2",
                                 "compression.rotation=fixed", "compression.warmup_steps=1",
                                 "compression.fit_during_lr_warmup=true"},
        std::vector<std::string>{"parallel.context=4", "parallel.split=contiguous", "compression.method=mos",
                                 "compression.k_rank=4", "compression.v_rank=4", "compression.warmup_steps=0",
                                 "compression.weight_sync=sparse", "compression.sync_every=3"},
        std::vector<std::string>{"parallel.context=2", "compression.method=topk", "compression.topk_fraction=0.1"},
        std::vector<std::string>{"parallel.context=4", "compression.method=topk", "compression.topk_fraction=0.1",
                                 "compression.warmup_steps=2", "compression.compress_final_layer=false"},
        std::vector<std::string>{"parallel.context=4", "compression.method=quantize", "compression.bits=4"}));

// A field of /proc/self/status in KiB ("VmRSS": resident now, "VmHWM": its peak).
long status_kib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

// How far `f`, run in a forked child, raises the child's peak resident KiB over
// what it held when it started (the child's own figures: the parent's earlier
// tests do not count).
template <class F> long child_peak_growth_kib(F f) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const long before = status_kib("VmRSS");
    f();
    const long growth = status_kib("VmHWM") - before;
    _exit(write(fds[1], &growth, sizeof growth) == sizeof growth ? 0 : 1);
  }
  close(fds[1]);
  long growth = -1;
  const bool got = read(fds[0], &growth, sizeof growth) == sizeof growth;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(got && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return growth;
}

// The MoS paper's model (743M parameters: 2.9 GiB per float32 copy, and a rank
// holds four: weights, gradients, AdamW's two moments) on 8 context ranks, and
// in 2 stages x 4 context ranks: the dry step grows the process by less than a
// tenth of one copy.
TEST(DryRun, AllocatesNothingOfTheModelsSize) {
  const Scenario s = builtin_scenario("mos-paper-mos-300mbps", {"compression.warmup_steps=0"});
  const double copy_kib = double(s.model.parameters()) * sizeof(float) / 1024;
  ASSERT_GT(s.model.parameters(), 700e6);
  EXPECT_LT(child_peak_growth_kib([&] { dry_step_graph(s, 0); }), 0.1 * copy_kib);
  Scenario pp = builtin_scenario("mos-paper-mos-300mbps",
                                 {"compression.warmup_steps=0", "compression.weight_sync=all_reduce",
                                  "parallel.pipeline=2", "parallel.context=4", "parallel.microbatches=2", "training.batch_size=2",
                                  "model.tie_embeddings=false"});
  EXPECT_LT(child_peak_growth_kib([&] { steady_step_graph(pp); }), 0.1 * copy_kib);
}

}  // namespace
}  // namespace lowband::parallel::test
