// The context-parallel trainer with training.backend "cuda" against the same
// scenario on the CPU: every replica on the GPU, the codec staged through the
// host. Losses, gradient norms and the final weights must agree over several
// steps, for plain all-reduce, zigzag chunks, a MoS codec with its warm-up and
// learned heads, top-k, and sparse weight sync. Also: "cuda" where no GPU can
// be used is an InputError naming training.backend, and devices.timing "auto"
// measures only a CPU training (both run everywhere).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/device.h"
#include "runtime/compress/make_codec.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/load.h"
#include "runtime/train/run.h"
#include "tests/kernels/reference.h"

namespace lowband::parallel {
namespace {

Scenario small(const std::string& backend, std::vector<std::string> extra) {
  std::vector<std::string> sets = {"model.layers=2",        "model.d_model=64",
                                   "model.heads=4",         "model.kv_heads=2",
                                   "model.ffn_hidden=96",   "model.seq_len=96",
                                   "network.nodes=4",       "training.batch_size=2",
                                   "training.lr=0.003",     "training.lr_warmup_steps=0",
                                   "training.steps=6",      "training.backend=" + backend};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return builtin_scenario("default", sets);
}

std::vector<int32_t> tokens(const Scenario& s, int step, int salt) {
  std::vector<int32_t> t(size_t(s.training.batch_size * s.model.seq_len));
  uint64_t x = 99 + 7919 * uint64_t(step) + uint64_t(salt);
  for (auto& v : t) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    v = int32_t((x >> 33) % uint64_t(s.model.vocab));
  }
  return t;
}

struct Case {
  const char* name;
  std::vector<std::string> sets;
};

// Names the case in ctest's listing (gtest would otherwise dump its bytes).
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class TrainerCudaVsCpu : public ::testing::TestWithParam<Case> {};

TEST_P(TrainerCudaVsCpu, StepsAgree) {
  std::string why;
  if (!kernels::cuda_available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  const Case& c = GetParam();
  const Scenario sc = small("cpu", c.sets), sg = small("cuda", c.sets);
  LayoutTrainer cpu(sc), gpu(sg);
  ASSERT_EQ(gpu.backend().device, kernels::Device::cuda);
  for (int step = 0; step < sc.training.steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const auto in = tokens(sc, step, 0), tg = tokens(sc, step, 1);
    const StepRecord rc = cpu.train_step(step, in.data(), tg.data(), sc.training.batch_size, false);
    const StepRecord rg = gpu.train_step(step, in.data(), tg.data(), sg.training.batch_size, false);
    EXPECT_NEAR(rg.loss, rc.loss, 1e-4 * std::fabs(rc.loss));
    EXPECT_NEAR(rg.grad_norm, rc.grad_norm, 1e-3 * rc.grad_norm);
    EXPECT_EQ(rg.weight_sync, rc.weight_sync);
    ASSERT_EQ(rg.kv_reconstruction_error_k.size(), rc.kv_reconstruction_error_k.size());
    for (size_t l = 0; l < rc.kv_reconstruction_error_k.size(); ++l)
      EXPECT_NEAR(rg.kv_reconstruction_error_k[l], rc.kv_reconstruction_error_k[l], 1e-3);
  }
  const auto ec = tokens(sc, 100, 0), et = tokens(sc, 100, 1);
  const float eval_c = cpu.evaluate(ec.data(), et.data(), sc.training.batch_size);
  const float eval_g = gpu.evaluate(ec.data(), et.data(), sg.training.batch_size);
  EXPECT_NEAR(eval_g, eval_c, 1e-4 * std::fabs(eval_c));
  // Every replica moved the same way on both backends.
  for (int r = 0; r < cpu.ranks(); ++r) {
    const std::vector<float> pc = cpu.model(r).params_to_host(), pg = gpu.model(r).params_to_host();
    EXPECT_LT(kernels::test::rel_error(pg, pc), 1e-4) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Backends, TrainerCudaVsCpu,
    ::testing::Values(Case{"single_rank", {"parallel.context=1"}},
                      Case{"ring_contiguous", {"parallel.context=2", "parallel.split=contiguous"}},
                      Case{"zigzag_gather", {"parallel.context=4", "parallel.split=zigzag",
                                             "parallel.exchange=all_gather"}},
                      Case{"mos_warmup_then_compressed",
                           {"parallel.context=2", "compression.method=mos", "compression.k_ratio=0.75",
                            "compression.v_ratio=0.5", "compression.warmup_steps=2"}},
                      Case{"topk_sparse_sync",
                           {"parallel.context=2", "compression.method=topk", "compression.topk_fraction=0.3",
                            "compression.weight_sync=sparse", "compression.sync_fraction=0.2",
                            "compression.sync_every=2"}}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// save_state/load_state through host copies: a GPU trainer restored after 3
// steps continues like the uninterrupted one (to a tolerance: the GPU's
// embedding backward adds with atomics, so runs differ in the last bits).
// Sparse sync keeps the replicas apart and MoS gives the codec state to carry.
TEST(TrainerCudaResume, RestoredGpuTrainerContinuesTheRun) {
  std::string why;
  if (!kernels::cuda_available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  const Scenario s = small("cuda", {"parallel.context=2", "compression.method=mos",
                                    "compression.k_ratio=0.75", "compression.v_ratio=0.5",
                                    "compression.warmup_steps=1", "compression.weight_sync=sparse",
                                    "compression.sync_fraction=0.2", "compression.sync_every=2"});
  auto run = [&](LayoutTrainer& t, int from, int to, std::vector<double>* losses) {
    for (int step = from; step < to; ++step) {
      const auto in = tokens(s, step, 0), tg = tokens(s, step, 1);
      const double loss = t.train_step(step, in.data(), tg.data(), s.training.batch_size, false).loss;
      if (losses) losses->push_back(loss);
    }
  };
  LayoutTrainer straight(s);
  std::vector<double> expected;
  run(straight, 0, 6, &expected);
  LayoutTrainer first(s);
  run(first, 0, 3, nullptr);
  std::stringstream state;
  first.save_state(state);
  LayoutTrainer resumed(s);
  resumed.load_state(state);
  EXPECT_EQ(state.peek(), std::char_traits<char>::eof()) << "load_state left bytes unread";
  std::vector<double> got;
  run(resumed, 3, 6, &got);
  for (size_t k = 0; k < got.size(); ++k)
    EXPECT_NEAR(got[k], expected[k + 3], 1e-5 * std::fabs(expected[k + 3])) << "step " << k + 3;
  for (int r = 0; r < 2; ++r)
    EXPECT_LT(kernels::test::rel_error(resumed.model(r).params_to_host(),
                                       straight.model(r).params_to_host()),
              1e-5)
        << "rank " << r;
}

TEST(TrainerBackend, CudaWithoutAGpuNamesTheKey) {
  std::string why;
  if (kernels::cuda_available(&why)) GTEST_SKIP() << "a CUDA device is present: nothing to refuse";
  const Scenario s = small("cuda", {"parallel.context=2"});
  try {
    LayoutTrainer t(s);
    FAIL() << "a cuda trainer was built without a GPU";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "training.backend") << e.what();
    EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
  }
}

// devices.timing "auto" measures the kernels only when they ran on what the
// ranks are modelled as (this machine's CPU).
TEST(TrainerBackend, AutoTimingMeasuresOnlyACpuTraining) {
  EXPECT_EQ(train::compute_timing(small("cpu", {})), ComputeTiming::measured);
  EXPECT_EQ(train::compute_timing(small("cuda", {})), ComputeTiming::profile);
  EXPECT_EQ(train::compute_timing(small("cuda", {"devices.timing=measured"})), ComputeTiming::measured);
}

}  // namespace
}  // namespace lowband::parallel
