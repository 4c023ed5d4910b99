// Outer syncs that run beside the inner steps (parallel.data_sync.delay_steps τ,
// local_weight α, eager, fragments; sync/outer_sync.h, parallel/data/outer_step.h):
// - the delayed update (τ = H) is the synchronous one applied a round later,
//   hand-computed over two rounds; the eager one takes each replica's own fresh
//   Δ at once; mixing keeps α of the local weights;
// - an exchange staged or in flight is checkpointed and merged bit for bit;
// - in the trainer the exchange is launched as the step after the issue begins
//   and merged τ steps later; the steps between are one graph (a window) whose
//   replay overlaps the exchange with their compute;
// - Streaming DiLoCo's fragments are independent syncs at their own offsets,
//   halving the peak bytes per step;
// - low-bit outer gradients merge the mean of the decoded messages;
// - the keys' bad values are named by their JSON path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "comm/in_process.h"
#include "common/error.h"
#include "runtime/estimate/estimate.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/load.h"
#include "runtime/sync/outer_sync.h"
#include "runtime/sync/pack.h"
#include "runtime/train/run.h"
#include "sim/replay.h"
#include "tests/runtime/test_numeric_support.h"
#include "tests/runtime/test_pipeline_support.h"
#include "tests/runtime/test_run_support.h"
#include "tests/runtime/test_sparseloco_support.h"

namespace lowband::sync::test {
namespace {

constexpr int R = 2;
constexpr double kLr = 0.7, kMu = 0.9;

DataSyncConfig diloco(int tau, bool eager = false, double local_weight = 0) {
  DataSyncConfig d;
  d.method = DataSyncMethod::diloco;
  d.inner_steps = 3;
  d.outer_lr = kLr;
  d.outer_momentum = kMu;
  d.delay_steps = tau;
  d.eager = eager;
  d.local_weight = local_weight;
  return d;
}

// Replica r's inner steps of round `round`: its weights plus its own drift.
void drift(std::vector<float>& theta, int r, int round) {
  const std::vector<float> d = normal_values(int64_t(theta.size()), 1e-2, unsigned(100 * round + r + 1));
  for (size_t i = 0; i < theta.size(); ++i) theta[i] += d[i];
}

// Round `round`'s pseudo-gradient of every replica from `start` (θ_start − θ_r, as float32 rounds it).
std::vector<std::vector<double>> deltas(const std::vector<float>& start, int round) {
  std::vector<std::vector<double>> out;
  for (int r = 0; r < R; ++r) {
    std::vector<float> theta = start;
    drift(theta, r, round);
    std::vector<double> d(theta.size());
    for (size_t i = 0; i < theta.size(); ++i) d[i] = double(float(start[i] - theta[i]));
    out.push_back(d);
  }
  return out;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

// τ = H, two replicas. Round 0 ends with its Δ staged and, no exchange having
// arrived, every replica back at θ_0 (the rounds start from the last global
// weights); round 1's end merges round 0's exchange — exactly the synchronous
// DiLoCo step of round 0 — and round 2's merges round 1's (whose Δ is measured
// from θ_0, where round 1 began): G_2 = G_1 − lr(g_1 + μ m_2), m_2 = μ g_0 + g_1.
TEST(DelayedOuterSync, IsTheSynchronousStepARoundLater) {
  const model::ParamLayout layout = one_layer_part();
  const std::vector<float> theta0 = normal_values(layout.count(), 0.1, 7u);
  std::vector<std::vector<float>> after0(R), after1(R), after2(R), synchronous(R);
  comm::InProcessWorld world(R);
  world.run([&](comm::Communicator& group) {
    const int r = group.rank();
    std::vector<float> params = theta0;
    OuterSync outer(diloco(3), layout, params.data());
    for (int round = 0; round < 3; ++round) {
      drift(params, r, round);
      outer.stage(params.data());
      if (round == 0) outer.finish_first_round(params.data(), R);
      else outer.finish(params.data());
      (round == 0 ? after0 : round == 1 ? after1 : after2)[size_t(r)] = params;
      if (round < 2) {
        outer.launch(group, OuterSync::Launch::background);
        group.wait_deferred();
      }
    }
    std::vector<float> sync_params = theta0;  // synchronous DiLoCo, round 0 alone
    OuterSync sync(diloco(0), layout, sync_params.data());
    drift(sync_params, r, 0);
    sync.outer_step(group, sync_params.data());
    synchronous[size_t(r)] = sync_params;
  });
  for (int r = 0; r < R; ++r) {
    EXPECT_EQ(after0[size_t(r)], theta0) << "replica " << r << " after round 0";
    EXPECT_EQ(after1[size_t(r)], synchronous[size_t(r)]) << "replica " << r << ": round 0's step, a round late";
    EXPECT_EQ(after2[size_t(r)], after2[0]);
  }
  // Round 2 by hand, in double: g_k the mean of round k's Δ.
  const auto d0 = deltas(theta0, 0), d1 = deltas(theta0, 1);
  std::vector<double> expected(theta0.size());
  for (size_t i = 0; i < theta0.size(); ++i) {
    const double g0 = (d0[0][i] + d0[1][i]) / R, g1 = (d1[0][i] + d1[1][i]) / R;
    const double m1 = g0, m2 = kMu * m1 + g1;
    const double G1 = double(after1[0][i]);
    expected[i] = G1 - kLr * (g1 + kMu * m2);
  }
  EXPECT_LT(max_abs_diff(after2[0], expected), 2e-6);
}

// Eager (τ = H): replica r's outer step after round k takes the others' Δ of
// round k − 1 and its own of round k, so after round 0 it has its own Δ / R
// applied, and after round 1 g̃_r = (Σ_q Δ0_q − Δ0_r + Δ1_r) / R from its own
// weights; the replicas differ.
TEST(DelayedOuterSync, EagerTakesTheReplicasOwnFreshShare) {
  const model::ParamLayout layout = one_layer_part();
  const std::vector<float> theta0 = normal_values(layout.count(), 0.1, 9u);
  std::vector<std::vector<float>> after0(R), after1(R);
  comm::InProcessWorld world(R);
  world.run([&](comm::Communicator& group) {
    const int r = group.rank();
    std::vector<float> params = theta0;
    OuterSync outer(diloco(3, /*eager=*/true), layout, params.data());
    drift(params, r, 0);
    outer.stage(params.data());
    outer.finish_first_round(params.data(), R);
    after0[size_t(r)] = params;
    outer.launch(group, OuterSync::Launch::background);
    group.wait_deferred();
    drift(params, r, 1);
    outer.stage(params.data());
    outer.finish(params.data());
    after1[size_t(r)] = params;
  });
  const auto d0 = deltas(theta0, 0);
  for (int r = 0; r < R; ++r) {
    const auto d1 = deltas(after0[size_t(r)], 1);
    std::vector<double> first(theta0.size()), second(theta0.size());
    for (size_t i = 0; i < theta0.size(); ++i) {
      const double g0 = d0[size_t(r)][i] / R, m1 = g0;
      first[i] = double(theta0[i]) - kLr * (g0 + kMu * m1);
      const double g1 = (d0[0][i] + d0[1][i] - d0[size_t(r)][i] + d1[size_t(r)][i]) / R, m2 = kMu * m1 + g1;
      second[i] = double(after0[size_t(r)][i]) - kLr * (g1 + kMu * m2);
    }
    EXPECT_LT(max_abs_diff(after0[size_t(r)], first), 2e-6) << "replica " << r;
    EXPECT_LT(max_abs_diff(after1[size_t(r)], second), 2e-6) << "replica " << r;
  }
  EXPECT_NE(after1[0], after1[1]);
}

// local_weight α: the merge leaves fl(α·θ_local + (1 − α)·θ_global), θ_global
// being what α = 0 leaves, bit for bit.
TEST(DelayedOuterSync, MixingKeepsTheLocalShare) {
  const model::ParamLayout layout = one_layer_part();
  const std::vector<float> theta0 = normal_values(layout.count(), 0.1, 11u);
  std::vector<std::vector<float>> mixed(R), global(R), local(R);
  comm::InProcessWorld world(R);
  world.run([&](comm::Communicator& group) {
    const int r = group.rank();
    for (double alpha : {0.0, 0.25}) {
      std::vector<float> params = theta0;
      OuterSync outer(diloco(0, false, alpha), layout, params.data());
      drift(params, r, 0);
      local[size_t(r)] = params;
      outer.outer_step(group, params.data());
      (alpha == 0 ? global : mixed)[size_t(r)] = params;
    }
  });
  for (int r = 0; r < R; ++r)
    for (size_t i = 0; i < theta0.size(); ++i)
      ASSERT_EQ(mixed[size_t(r)][i], float(0.25 * double(local[size_t(r)][i]) + 0.75 * double(global[size_t(r)][i])))
          << "replica " << r << " element " << i;
}

// A checkpoint with a message staged, or an exchange in flight, resumes into the
// same merge bit for bit.
TEST(DelayedOuterSync, StateKeepsTheExchangeInFlight) {
  const model::ParamLayout layout = one_layer_part();
  const std::vector<float> theta0 = normal_values(layout.count(), 0.1, 13u);
  for (const DataSyncConfig& config : {diloco(3), diloco(3, /*eager=*/true)}) {
    std::vector<std::vector<float>> straight(R), resumed(R);
    comm::InProcessWorld world(R);
    world.run([&](comm::Communicator& group) {
      const int r = group.rank();
      std::vector<float> params = theta0;
      OuterSync outer(config, layout, params.data());
      drift(params, r, 0);
      outer.stage(params.data());
      outer.finish_first_round(params.data(), R);
      std::stringstream staged;
      outer.save_state(staged);  // staged, not launched
      OuterSync copy(config, layout, theta0.data());
      copy.load_state(staged);
      ASSERT_TRUE(copy.staged());
      for (OuterSync* o : {&outer, &copy}) {
        o->launch(group, OuterSync::Launch::background);
        group.wait_deferred();
      }
      std::stringstream flying;
      outer.save_state(flying);  // in flight
      OuterSync again(config, layout, theta0.data());
      again.load_state(flying);
      ASSERT_TRUE(again.in_flight());
      drift(params, r, 1);
      std::vector<float> p1 = params, p2 = params, p3 = params;
      outer.stage(p1.data());
      outer.finish(p1.data());
      copy.stage(p2.data());
      copy.finish(p2.data());
      again.stage(p3.data());
      again.finish(p3.data());
      EXPECT_EQ(p1, p2);
      straight[size_t(r)] = p1;
      resumed[size_t(r)] = p3;
    });
    for (int r = 0; r < R; ++r) EXPECT_EQ(straight[size_t(r)], resumed[size_t(r)]) << "replica " << r;
  }
}

// Streaming DiLoCo's low-bit outer gradients (outer_gradient_bits 4): each
// replica's Δ goes as 4-bit codes and a table per tensor (pack_dense: the byte
// formula), every decoded value within the bin width 6σ / 2^4 of Δ where Δ lies
// inside mean ± 3σ; the outer step (lr 1, no momentum) is θ_start minus the mean
// of the decoded messages, on every replica alike.
TEST(QuantisedOuterSync, MergesTheMeanOfTheDecodedMessages) {
  const model::ParamLayout layout = one_layer_part();
  const std::vector<float> theta0 = normal_values(layout.count(), 0.1, 17u);
  DataSyncConfig config = diloco(0);
  config.outer_lr = 1.0;
  config.outer_momentum = 0;
  config.outer_gradient_bits = 4;
  const int64_t n = layout.count();
  int64_t expected_bytes = 4 * int64_t(layout.tensors().size()) * 16 + (4 * n + 7) / 8;
  EXPECT_EQ(OuterSync::message_bytes(config, layout), expected_bytes);
  // Decoded within the bin width where the values lie in the range.
  const std::vector<float> d = normal_values(n, 1e-2, 3u);
  std::vector<uint8_t> bytes = pack_dense(layout.tensors(), 4, d.data());
  ASSERT_EQ(int64_t(bytes.size()), expected_bytes);
  std::vector<float> back(static_cast<size_t>(n));
  unpack_dense(layout.tensors(), 4, bytes.data(), int64_t(bytes.size()), back.data());
  for (const model::TensorInfo& t : layout.tensors()) {
    double mean = 0, var = 0;
    for (int64_t i = t.offset; i < t.offset + t.count(); ++i) mean += d[size_t(i)] / double(t.count());
    for (int64_t i = t.offset; i < t.offset + t.count(); ++i)
      var += (d[size_t(i)] - mean) * (d[size_t(i)] - mean) / double(t.count());
    const double sd = std::sqrt(var), width = 6 * sd / 16;
    for (int64_t i = t.offset; i < t.offset + t.count(); ++i) {
      if (std::abs(d[size_t(i)] - mean) > 3 * sd) continue;  // an edge bin's
      EXPECT_LE(std::abs(double(back[size_t(i)]) - d[size_t(i)]), width + 1e-9) << t.name;
    }
  }
  std::vector<std::vector<float>> after(R), messages(R);
  comm::InProcessWorld world(R);
  world.run([&](comm::Communicator& group) {
    const int r = group.rank();
    std::vector<float> params = theta0;
    OuterSync outer(config, layout, params.data());
    drift(params, r, 0);
    std::vector<float> delta(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) delta[size_t(i)] = theta0[size_t(i)] - params[size_t(i)];
    const std::vector<uint8_t> mine = pack_dense(layout.tensors(), 4, delta.data());
    messages[size_t(r)].resize(size_t(n));
    unpack_dense(layout.tensors(), 4, mine.data(), int64_t(mine.size()), messages[size_t(r)].data());
    outer.outer_step(group, params.data());
    after[size_t(r)] = params;
  });
  EXPECT_EQ(after[0], after[1]);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(after[0][size_t(i)], float(double(theta0[size_t(i)]) -
                                         float((double(messages[0][size_t(i)]) + double(messages[1][size_t(i)])) / R)))
        << "element " << i;
}

}  // namespace
}  // namespace lowband::sync::test

namespace lowband::parallel::test {
namespace {

using namespace pipeline_support;  // NOLINT(google-build-using-namespace): the tests' fixtures

// Two replicas of one rank each under DiLoCo, H = 3, τ as given, on 100 Mbps
// links: the exchange of the tiny model's 4-byte pseudo-gradients takes a few
// times an inner step's compute.
Scenario delayed(int tau) {
  Scenario s = tiny_pipeline(1, 1, PipelineSchedule::one_f_one_b);
  s.parallel.data = 2;
  s.parallel.data_sync.method = DataSyncMethod::diloco;
  s.parallel.data_sync.inner_steps = 3;
  s.parallel.data_sync.delay_steps = tau;
  s.network.nodes = 2;
  s.network.link.bandwidth_bytes_per_s = 100e6 / 8;
  return s;
}

double busiest_compute(const sim::StepGraph& g) {
  double most = 0;
  for (int r = 0; r < g.ranks(); ++r) most = std::max(most, g.compute_seconds(r));
  return most;
}

std::vector<StepRecord> recorded(const Scenario& s, int steps) {
  LayoutTrainer t(s, ComputeTiming::profile);
  std::vector<StepRecord> out;
  for (int k = 0; k < steps; ++k) {
    const TestBatch b = make_batch(s, k);
    out.push_back(t.train_step(k, b.inputs.data(), b.targets.data(), s.training.batch_size));
  }
  return out;
}

// τ = H = 3: step 2 stages round 0's Δ, step 3 begins by launching it and step 5
// merges it, so steps 3–5 are one graph whose first step carries the exchange;
// its replay overlaps the exchange with the inner steps: faster than the
// synchronous period (steps 3–5 at τ = 0, the exchange at step 5's end) by more
// than one step's compute (an exchange joined within its own step would hide
// behind that step alone), and no faster than its compute or its exchange.
TEST(DelayedSync, TheWindowOverlapsTheExchangeWithTheInnerSteps) {
  const Scenario late = delayed(3), now = delayed(0);
  const std::vector<StepRecord> a = recorded(late, 6), b = recorded(now, 6);
  for (int k : {3, 4}) {
    EXPECT_TRUE(a[size_t(k)].window_open) << "step " << k;
    EXPECT_EQ(a[size_t(k)].graph.size(), 0u) << "step " << k;
  }
  const sim::StepGraph& window = a[5].graph;
  ASSERT_FALSE(a[5].window_open);
  ASSERT_EQ(window.steps(), 3);
  EXPECT_GT(window.steps_part(0, 0).bytes_sent(0, "pseudo_grad"), 0);
  EXPECT_EQ(window.steps_part(1, 2).bytes_sent(0, "pseudo_grad"), 0);
  EXPECT_EQ(window.bytes_sent(0, "pseudo_grad"), b[5].graph.bytes_sent(0, "pseudo_grad"));
  const sim::ReplayResult w = sim::replay(late.network, window);
  double synchronous = 0, compute = 0;
  for (int k = 3; k <= 5; ++k) {
    synchronous += sim::replay(now.network, b[size_t(k)].graph).step_seconds;
    compute += busiest_compute(window.steps_part(k - 3, k - 3));
  }
  const double exchange = sim::replay(now.network, b[5].graph).exposed_comm_seconds;
  const double step = compute / 3;
  ASSERT_GT(exchange, 1.5 * step) << "the network must make the exchange longer than a step";
  EXPECT_LT(w.step_seconds, synchronous - 1.5 * step);
  EXPECT_GE(w.step_seconds, std::max(compute, exchange) * (1 - 1e-9));
  ASSERT_EQ(w.step_end_seconds.size(), 2u);
  EXPECT_LT(w.step_end_seconds[0], w.step_end_seconds[1]);
  EXPECT_LT(w.step_end_seconds[1], w.step_seconds);
}

// τ = 0 records what it always did: one graph per step, none open.
TEST(DelayedSync, NoDelayKeepsOneGraphPerStep) {
  for (const StepRecord& rec : recorded(delayed(0), 6)) {
    EXPECT_FALSE(rec.window_open);
    EXPECT_EQ(rec.graph.steps(), 1);
  }
}

// Checkpointed with round 0's Δ staged (after step 2) or its exchange in flight
// (after step 4), a trainer resumes bit for bit; so does the eager one, a
// streaming-style τ < H with mixing, and three fragments.
TEST(DelayedSync, ResumesBitIdenticallyMidExchange) {
  Scenario eager = delayed(3);
  eager.parallel.data_sync.eager = true;
  Scenario mixing = delayed(1);
  mixing.parallel.data_sync.local_weight = 0.5;
  Scenario streaming = delayed(1);  // 3 fragments, one synced after each step
  streaming.parallel.data_sync.fragments = 3;
  for (const Scenario& s : {delayed(3), eager, mixing, streaming})
    for (int cut : {3, 5}) {
      SCOPED_TRACE("cut " + std::to_string(cut));
      expect_resumes_bit_identically<LayoutTrainer>(s, cut, 8);
    }
}

std::string error_of(const std::string& data_sync) {
  try {
    builtin_scenario("default", {"parallel.context=1", "parallel.data=4", "training.batch_size=4",
                                 "parallel.data_sync=" + data_sync});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(DelayedSync, BadKeysNameTheirPath) {
  EXPECT_NE(error_of(R"({"method": "diloco", "inner_steps": 4, "delay_steps": 5})")
                .find("parallel.data_sync.delay_steps: 5 steps: expected at most inner_steps (4)"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method": "diloco", "inner_steps": 4, "delay_steps": 2, "eager": true})")
                .find("parallel.data_sync.eager: the eager update"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method": "sparseloco", "eager": true})").find("parallel.data_sync.eager"), std::string::npos);
  EXPECT_NE(error_of(R"({"method": "diloco", "local_weight": 1})").find("parallel.data_sync.local_weight"),
            std::string::npos);
}


class DelayedRun : public train::test::RunDirTest {};

// A run's steps.jsonl: the window's steps each get their share of its replay
// (all positive, adding up to the run's time), whether the run replays them in
// batches of 1 or of 100 (a window is timed when it closes); the delayed run is
// faster than the synchronous one, and the exchange's bytes are on the step that
// launches it.
TEST_F(DelayedRun, AWindowsStepsShareItsReplay) {
  std::vector<std::vector<nlohmann::json>> runs;
  for (const auto& [tau, every] : {std::pair{3, 1}, std::pair{3, 100}, std::pair{0, 1}}) {
    Scenario s = delayed(tau);
    s.training.steps = 9;
    s.training.eval_every = 0;
    s.devices.timing = DeviceTiming::profile;
    train::RunOptions o;
    o.out_dir = (dir_ / ("tau" + std::to_string(tau) + "_" + std::to_string(every))).string();
    o.replay_every = every;
    train::run_training(s, o);
    runs.push_back(train::test::read_jsonl(std::filesystem::path(o.out_dir) / "steps.jsonl"));
  }
  ASSERT_EQ(runs[0].size(), 9u);
  double sum = 0;
  for (size_t i = 0; i < runs[0].size(); ++i) {
    const nlohmann::json& a = runs[0][i];
    EXPECT_GT(a.at("sim_step_seconds").get<double>(), 0) << "step " << i + 1;
    EXPECT_EQ(a.at("sim_step_seconds"), runs[1][i].at("sim_step_seconds")) << "step " << i + 1;
    EXPECT_EQ(a.at("train_loss"), runs[1][i].at("train_loss"));
    sum += a.at("sim_step_seconds").get<double>();
    // Round 0's exchange is launched by step 4 (training step 3), round 1's by step 7.
    const double pseudo = a.at("bytes_sent_per_rank").at("pseudo_grad").get<double>();
    if (i + 1 == 4 || i + 1 == 7) EXPECT_GT(pseudo, 0) << "step " << i + 1;
    else EXPECT_EQ(pseudo, 0) << "step " << i + 1;
  }
  EXPECT_NEAR(sum, runs[0].back().at("sim_total_seconds").get<double>(), 1e-12 * sum);
  EXPECT_LT(runs[0].back().at("sim_total_seconds").get<double>(), runs[2].back().at("sim_total_seconds").get<double>());
}

}  // namespace
}  // namespace lowband::parallel::test

namespace lowband::parallel::test {
namespace {

using namespace pipeline_support;  // NOLINT(google-build-using-namespace): the tests' fixtures

// Streaming DiLoCo with F = 2 fragments of a 4-layer model (fragment 0: the
// embedding and layers 0–1, fragment 1: layers 2–3 and the head), H = 2, outer
// lr 1 and no momentum: each outer step of a fragment is the replicas' mean of
// that fragment alone, fragment 1 after steps 0, 2, 4 (offset ⌊H/F⌋ = 1) and
// fragment 0 after steps 1, 3 — F independent DiLoCo syncs. Reference: two
// one-replica trainers stepped alone, each fragment averaged by hand on its steps.
TEST(StreamingSync, FragmentsAreIndependentDilocoSyncsAtTheirOffsets) {
  const int R = 2;
  Scenario base = tiny_pipeline(1, 1, PipelineSchedule::one_f_one_b);
  Scenario s = base;
  s.parallel.data = R;
  s.parallel.data_sync.method = DataSyncMethod::diloco;
  s.parallel.data_sync.inner_steps = 2;
  s.parallel.data_sync.fragments = 2;
  s.parallel.data_sync.outer_lr = 1.0;
  s.parallel.data_sync.outer_momentum = 0;
  LayoutTrainer t(s, ComputeTiming::profile);
  base.training.batch_size /= R;
  std::vector<std::unique_ptr<LayoutTrainer>> refs;
  for (int q = 0; q < R; ++q) refs.push_back(std::make_unique<LayoutTrainer>(base, ComputeTiming::profile));
  const model::ParamLayout& layout = refs[0]->model(0).layout();
  const size_t cut = size_t(layout.layer(2).attn_norm), end = size_t(layout.count());
  const int64_t per = int64_t(base.training.batch_size) * s.model.seq_len;
  for (int k = 0; k < 5; ++k) {
    SCOPED_TRACE("step " + std::to_string(k));
    const TestBatch b = make_batch(s, k);
    t.train_step(k, b.inputs.data(), b.targets.data(), s.training.batch_size, false);
    for (int q = 0; q < R; ++q)
      refs[size_t(q)]->train_step(k, b.inputs.data() + q * per, b.targets.data() + q * per, base.training.batch_size,
                                  false);
    const size_t lo = k % 2 == 0 ? cut : 0, hi = k % 2 == 0 ? end : cut;  // the fragment that syncs
    std::vector<std::vector<float>> p;
    for (auto& ref : refs) p.push_back(ref->model(0).params_to_host());
    for (size_t i = lo; i < hi; ++i) {
      const float mean = float((double(p[0][i]) + double(p[1][i])) / R);
      p[0][i] = p[1][i] = mean;
    }
    for (int q = 0; q < R; ++q) {
      std::copy(p[size_t(q)].begin(), p[size_t(q)].end(), refs[size_t(q)]->model(0).params());
      const std::vector<float> got = t.model(q).params_to_host();
      EXPECT_LT(lowband::test_support::rel_diff(got.data(), p[size_t(q)].data(), int64_t(end)), 1e-6) << "replica " << q;
    }
    // The fragment that did not sync differs between the replicas.
    const std::vector<float> a = t.model(0).params_to_host(), c = t.model(1).params_to_host();
    EXPECT_FALSE(std::equal(a.begin() + long(k % 2 == 0 ? 0 : cut), a.begin() + long(k % 2 == 0 ? cut : end),
                            c.begin() + long(k % 2 == 0 ? 0 : cut)));
  }
}

// estimate: two fragments halve the peak bytes per rank in one step and keep the
// period's average; each window holds τ steps.
TEST(StreamingSync, EstimateHalvesThePeakAndKeepsTheAverage) {
  Scenario s = load_scenario_file(std::string(LOWBAND_SOURCE_DIR) + "/scenarios/dp-overlap.json",
                                  {"parallel.data_sync.delay_steps=0"});
  const Estimate whole = estimate(s);
  s.parallel.data_sync.fragments = 2;
  s.parallel.data_sync.delay_steps = 5;
  const Estimate halves = estimate(s);
  ASSERT_TRUE(halves.sync);
  EXPECT_EQ(halves.sync->window_steps, 5);
  EXPECT_EQ(halves.sync->fragments, 2);
  EXPECT_NEAR(halves.bytes_per_rank_per_step.at("pseudo_grad"), whole.bytes_per_rank_per_step.at("pseudo_grad"),
              1e-9 * whole.bytes_per_rank_per_step.at("pseudo_grad"));
  EXPECT_LT(halves.peak_bytes_per_rank_per_step, 0.6 * whole.peak_bytes_per_rank_per_step);
  EXPECT_GT(halves.peak_bytes_per_rank_per_step, 0.4 * whole.peak_bytes_per_rank_per_step);
}

TEST(StreamingSync, BadFragmentsNameTheirKey) {
  const auto error_of = [](const std::string& data_sync, const std::string& layers = "4") {
    try {
      const Scenario s = builtin_scenario("default", {"parallel.context=1", "parallel.data=2", "training.batch_size=2",
                                                      "model.layers=" + layers, "parallel.data_sync=" + data_sync});
      LayoutTrainer t(s, LayoutTrainer::Dry{});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of(R"({"method": "diloco", "inner_steps": 2, "fragments": 3})")
                .find("parallel.data_sync.fragments: 3 fragments: expected at most inner_steps (2)"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method": "diloco", "inner_steps": 4, "fragments": 2, "delay_steps": 3})")
                .find("parallel.data_sync.delay_steps: 3 steps with 2 fragments"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"method": "diloco", "inner_steps": 8, "fragments": 6})", "4")
                .find("parallel.data_sync.fragments: 6 fragments of 4 layers"),
            std::string::npos);
}

}  // namespace
}  // namespace lowband::parallel::test
