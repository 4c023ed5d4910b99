// Partial participation (parallel.data_sync.deadline_seconds, quorum;
// sync/participation.h, train/run.cpp's RunLoop::close_round):
// - a round closes at the earliest of the last replica ready, the first plus the
//   deadline, the quorum-th; the others are late;
// - the replicas that made the round exchange among themselves and send the
//   late ones the result: the mean is over those that made it (float32
//   all-reduce and 4-bit all-gather alike), by hand, on every replica;
// - in the trainer a late replica's round is undone (its inner optimiser back to
//   the round's start) and it takes the merged weights;
// - in a run, the replay decides: a slow node's replica is dropped, the round's
//   steps no longer wait for it, the participants wait out the deadline; a
//   deadline nobody misses is the synchronous run bit for bit; quorum and
//   deadline agree where they drop the same replica; the network stays in the
//   training key; bad keys are named by their path.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "comm/in_process.h"
#include "common/error.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/parallel/rank_state.h"
#include "runtime/scenario/equal.h"
#include "runtime/scenario/load.h"
#include "runtime/sync/outer_sync.h"
#include "runtime/sync/pack.h"
#include "runtime/sync/participation.h"
#include "runtime/train/run.h"
#include "tests/runtime/test_numeric_support.h"
#include "tests/runtime/test_pipeline_support.h"
#include "tests/runtime/test_run_support.h"
#include "tests/runtime/test_sparseloco_support.h"

namespace lowband::sync::test {
namespace {

DataSyncConfig rule(double deadline, int quorum) {
  DataSyncConfig d;
  d.method = DataSyncMethod::diloco;
  d.deadline_seconds = deadline;
  d.quorum = quorum;
  return d;
}

TEST(CloseRound, TheEarliestOfTheRulesDecides) {
  const std::vector<double> ready = {1, 2, 5};
  struct Case {
    double deadline;
    int quorum;
    double close;
    std::vector<bool> made_it;
    double wait;
  };
  for (const Case& c : {Case{-1, 0, 5, {true, true, true}, 0},     // neither: wait for all
                        Case{0.5, 0, 1.5, {true, false, false}, 0.5},
                        Case{1.5, 0, 2.5, {true, true, false}, 0.5},
                        Case{10, 0, 5, {true, true, true}, 0},     // all in before the deadline
                        Case{-1, 2, 2, {true, true, false}, 0},
                        Case{0.5, 2, 1.5, {true, false, false}, 0.5},  // the deadline first
                        Case{3, 2, 2, {true, true, false}, 0}}) {      // the quorum first
    SCOPED_TRACE("deadline " + std::to_string(c.deadline) + ", quorum " + std::to_string(c.quorum));
    const RoundClose got = close_round(rule(c.deadline, c.quorum), ready);
    EXPECT_DOUBLE_EQ(got.close_seconds, c.close);
    EXPECT_EQ(got.made_it, c.made_it);
    EXPECT_DOUBLE_EQ(got.wait_seconds, c.wait);
  }
  // Replicas ready together make it together, even at a deadline of 0.
  EXPECT_EQ(close_round(rule(0, 0), {3, 1, 1}).made_it, (std::vector<bool>{false, true, true}));
}

// Three replicas drift from θ0; replica 1 is dropped. Replicas 0 and 2
// exchange among themselves (float32 all-reduce, or 4-bit all-gather) and 0
// sends the result to 1. The outer step (lr 0.7, momentum 0.9: m = g,
// θ = θ0 − lr(g + μg)) takes g the mean of replicas 0 and 2's Δ alone, on every
// replica alike, the dropped one included. The mean over three would be off by
// a third of the drift.
TEST(DroppedReplica, ContributesNothingToTheMean) {
  const model::ParamLayout layout = one_layer_part();
  const int64_t n = layout.count();
  const std::vector<float> theta0 = normal_values(n, 0.1, 5u);
  for (int bits : {32, 4}) {
    SCOPED_TRACE(std::to_string(bits) + " bits");
    DataSyncConfig config = rule(1, 0);
    config.outer_gradient_bits = bits;
    std::vector<std::vector<float>> after(3), sent(3);  // sent: each replica's Δ as the others decode it
    comm::InProcessWorld world(3);
    world.run([&](comm::Communicator& all) {
      const int r = all.rank();
      std::vector<float> params = theta0;
      OuterSync outer(config, layout, params.data());
      const std::vector<float> d = normal_values(n, 1e-2, unsigned(40 + r));
      for (int64_t i = 0; i < n; ++i) params[size_t(i)] += d[size_t(i)];
      std::vector<float> delta(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) delta[size_t(i)] = theta0[size_t(i)] - params[size_t(i)];
      sent[size_t(r)] = delta;
      if (bits == 4) {
        const std::vector<uint8_t> packed = pack_dense(layout.tensors(), 4, delta.data());
        unpack_dense(layout.tensors(), 4, packed.data(), int64_t(packed.size()), sent[size_t(r)].data());
      }
      const std::unique_ptr<comm::Communicator> in = all.split_known({0, -1, 0});
      const std::unique_ptr<comm::Communicator> to_late = all.split_known({0, 0, -1});
      if (r != 1) {
        outer.start(*in, params.data());
        in->wait_deferred();
        if (r == 0) outer.send_result(*to_late, 0);
      } else {
        outer.receive_result(*to_late, 0, 2);
      }
      outer.finish(params.data());
      after[size_t(r)] = params;
    });
    EXPECT_EQ(after[1], after[0]);
    EXPECT_EQ(after[2], after[0]);
    double worst = 0, without_drop = 0;
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = size_t(i);
      const double g = (double(sent[0][k]) + double(sent[2][k])) / 2;
      const double g3 = (double(sent[0][k]) + double(sent[1][k]) + double(sent[2][k])) / 3;
      worst = std::max(worst, std::abs(double(after[0][k]) - (double(theta0[k]) - 0.7 * 1.9 * g)));
      without_drop = std::max(without_drop, std::abs(double(after[0][k]) - (double(theta0[k]) - 0.7 * 1.9 * g3)));
    }
    EXPECT_LT(worst, 1e-6);
    EXPECT_GT(without_drop, 1e-3) << "the test must tell the two means apart";
  }
}

}  // namespace
}  // namespace lowband::sync::test

namespace lowband::parallel::test {
namespace {

using namespace pipeline_support;  // NOLINT(google-build-using-namespace): the tests' fixtures

// Three replicas of one rank each (nodes 0–2) under DiLoCo, H = 3, outer lr 1
// and no momentum (the merge is the participants' mean), 100 Mbps links.
Scenario three_replicas(double deadline, int quorum = 0) {
  Scenario s = tiny_pipeline(1, 1, PipelineSchedule::one_f_one_b);
  s.parallel.data = 3;
  s.training.batch_size = 3;
  s.parallel.data_sync.method = DataSyncMethod::diloco;
  s.parallel.data_sync.inner_steps = 3;
  s.parallel.data_sync.outer_lr = 1;
  s.parallel.data_sync.outer_momentum = 0;
  s.parallel.data_sync.deadline_seconds = deadline;
  s.parallel.data_sync.quorum = quorum;
  s.network.nodes = 3;
  s.network.link.bandwidth_bytes_per_s = 100e6 / 8;
  s.devices.timing = DeviceTiming::profile;
  s.training.checkpoint_every = 3;  // where a round closes
  return s;
}

// Node 2 (replica 2) computing at a quarter speed from the start.
Scenario slow_node_2(Scenario s) {
  sim::TraceSpec quarter;
  quarter.points = {{0, 0.25}};
  s.network.dynamics = {{{sim::DynamicTarget::Kind::node, 2, -1}, sim::DynamicQuantity::speed, quarter}};
  return s;
}

std::string optimizer_state(RankProgram& p) {
  std::ostringstream out;
  p.optimizer().save_state(out);
  return out.str();
}

// The trainer closes the round after step 2 only when asked; replica 1 dropped:
// every replica ends at the mean of replicas 0 and 2's weights, and replica 1's
// AdamW state is its state at the round's start (three steps taken would change it).
TEST(PartialRound, ADroppedReplicasRoundIsUndone) {
  const Scenario s = three_replicas(0);
  LayoutTrainer t(s, ComputeTiming::profile);
  const std::string before = optimizer_state(t.rank(1));
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(t.closes_round(k), k == 2) << "step " << k;
    const TestBatch b = make_batch(s, k);
    t.train_step(k, b.inputs.data(), b.targets.data(), s.training.batch_size);
  }
  const std::vector<float> w0 = t.model(0).params_to_host(), w2 = t.model(2).params_to_host();
  EXPECT_NE(optimizer_state(t.rank(1)), before);
  const Trainer::ClosedRound round = t.close_round(2, {true, false, true});
  EXPECT_GT(round.graph.bytes_sent(0, "pseudo_grad"), 0);
  const std::vector<float> after = t.model(0).params_to_host();
  EXPECT_EQ(t.model(1).params_to_host(), after);
  EXPECT_EQ(t.model(2).params_to_host(), after);
  double worst = 0;
  for (size_t i = 0; i < after.size(); ++i)
    worst = std::max(worst, std::abs(double(after[i]) - (double(w0[i]) + double(w2[i])) / 2));
  EXPECT_LT(worst, 1e-6);
  EXPECT_EQ(optimizer_state(t.rank(1)), before);
  EXPECT_THROW(t.close_round(2, {true, true, true}), std::logic_error);  // no round begun since
}

class PartialRun : public train::test::RunDirTest {
 protected:
  std::vector<nlohmann::json> run(Scenario s, const std::string& name) {
    s.training.steps = 6;
    s.training.eval_every = 0;
    train::RunOptions o;
    o.out_dir = (dir_ / name).string();
    train::run_training(s, o);
    return train::test::read_jsonl(dir_ / name / "steps.jsonl");
  }
};

// Node 2 computes at a quarter speed. Synchronous DiLoCo waits for it every
// step; with a deadline of 0 (or a quorum of 2) replica 2 misses every round:
// the inner steps take the fast replicas' time (the constant network's), the
// losses differ from the synchronous run's, and the two rules train alike.
// A deadline half of the slow replica's lag is waited out in full. A deadline
// nobody misses is the synchronous run bit for bit, times included.
TEST_F(PartialRun, TheReplayDecidesWhoIsLate) {
  const auto slowed = [](Scenario s) { return slow_node_2(std::move(s)); };
  const auto constant = run(three_replicas(-1), "constant");
  const auto sync = run(slowed(three_replicas(-1)), "sync");
  const auto deadline0 = run(slowed(three_replicas(0)), "deadline0");
  const auto quorum2 = run(slowed(three_replicas(-1, 2)), "quorum2");
  const auto nobody = run(slowed(three_replicas(1e6)), "nobody");
  ASSERT_EQ(deadline0.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    SCOPED_TRACE("step " + std::to_string(i + 1));
    const bool closes = i == 2 || i == 5;
    EXPECT_EQ(deadline0[i].contains("round_late_replicas"), closes);
    EXPECT_EQ(deadline0[i].at("train_loss"), quorum2[i].at("train_loss"));
    EXPECT_EQ(deadline0[i].at("sim_step_seconds"), quorum2[i].at("sim_step_seconds"));
    EXPECT_EQ(nobody[i].at("train_loss"), sync[i].at("train_loss"));
    EXPECT_EQ(nobody[i].at("sim_step_seconds"), sync[i].at("sim_step_seconds"));
    if (!closes) {  // the fast replicas' step
      const double fast = constant[i].at("sim_step_seconds").get<double>();  // a changing network rounds its own way
      EXPECT_NEAR(deadline0[i].at("sim_step_seconds").get<double>(), fast, 1e-12 * fast);
      EXPECT_GT(sync[i].at("sim_step_seconds").get<double>(), 3 * constant[i].at("sim_step_seconds").get<double>());
      continue;
    }
    EXPECT_EQ(deadline0[i].at("round_late_replicas"), nlohmann::json::array({2}));
    EXPECT_EQ(deadline0[i].at("round_replicas"), nlohmann::json::array({0, 1}));
    EXPECT_EQ(deadline0[i].at("round_wait_seconds").get<double>(), 0.0);
    EXPECT_EQ(nobody[i].at("round_late_replicas"), nlohmann::json::array());
  }
  EXPECT_NE(deadline0[3].at("train_loss"), sync[3].at("train_loss")) << "replica 2 dropped trains otherwise";
  EXPECT_LT(deadline0.back().at("sim_total_seconds").get<double>(), sync.back().at("sim_total_seconds").get<double>());
  // The slow replica's lag in a round: 3 inner steps at 4x; half of it as the deadline.
  const double step = constant[0].at("sim_step_seconds").get<double>();
  const double deadline = 0.5 * 3 * (4 - 1) * step;
  const auto halfway = run(slowed(three_replicas(deadline)), "halfway");
  EXPECT_EQ(halfway[2].at("round_late_replicas"), nlohmann::json::array({2}));
  EXPECT_NEAR(halfway[2].at("round_wait_seconds").get<double>(), deadline, 1e-9 * deadline);
  EXPECT_NEAR(halfway[2].at("sim_step_seconds").get<double>(),
              deadline0[2].at("sim_step_seconds").get<double>() + deadline, 1e-9);
  const nlohmann::json summary = nlohmann::json::parse(train::test::slurp(dir_ / "deadline0" / "summary.json"));
  EXPECT_EQ(summary.at("rounds_closed"), 2);
  EXPECT_EQ(summary.at("replicas_dropped"), 2);
  // The peak step's bytes beside the mean: the sync steps' exchange, 3 times the mean of 3 steps.
  double peak = 0, sum = 0;
  for (const nlohmann::json& line : deadline0) {
    peak = std::max(peak, line.at("bytes_sent_per_rank").at("total").get<double>());
    sum += line.at("bytes_sent_per_rank").at("total").get<double>();
  }
  EXPECT_GT(peak, 0);
  EXPECT_EQ(summary.at("bytes_sent_per_rank_peak_step").get<double>(), peak);
  EXPECT_NEAR(summary.at("bytes_sent_per_rank_per_step").at("total").get<double>(), sum / 6, 1e-9 * sum);
  EXPECT_NEAR(peak, 3 * sum / 6, 1e-9 * sum);
}

std::string error_of(const std::vector<std::string>& sets) {
  std::vector<std::string> all = {"parallel.context=1", "parallel.data=4", "training.batch_size=4", "network.nodes=4"};
  all.insert(all.end(), sets.begin(), sets.end());
  try {
    const Scenario s = builtin_scenario("default", all);
    LayoutTrainer t(s, ComputeTiming::profile);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(PartialRound, BadKeysNameTheirPath) {
  EXPECT_NE(error_of({R"(parallel.data_sync={"method": "diloco", "inner_steps": 4, "delay_steps": 2, "deadline_seconds": 1})"})
                .find("parallel.data_sync.deadline_seconds: partial participation closes a whole round"),
            std::string::npos);
  EXPECT_NE(error_of({R"(parallel.data_sync={"method": "diloco", "quorum": 5})"})
                .find("parallel.data_sync.quorum: 5 replicas of 4"),
            std::string::npos);
  EXPECT_NE(error_of({R"(parallel.data_sync={"method": "sparseloco", "quorum": 2})"}).find("parallel.data_sync.quorum"),
            std::string::npos);
  EXPECT_NE(error_of({R"(parallel.data_sync={"method": "diloco", "deadline_seconds": -1})"})
                .find("parallel.data_sync.deadline_seconds"),
            std::string::npos);
  EXPECT_NE(error_of({R"(parallel.data_sync={"method": "diloco", "inner_steps": 3, "quorum": 2})",
                      "training.checkpoint_every=5"})
                .find("training.checkpoint_every: 5 steps"),
            std::string::npos);
  // Not given, the default 100 is raised to the next multiple of H (30): a checkpoint where a round closes.
  const Scenario raised = builtin_scenario("default", {"parallel.context=1", "parallel.data=2", "training.batch_size=2",
                                                      R"(parallel.data_sync={"method": "diloco", "quorum": 1})"});
  EXPECT_EQ(raised.training.checkpoint_every, 120);
}

// Who makes a round depends on the network: two networks are two trainings.
TEST(PartialRound, TheNetworkIsPartOfTheTraining) {
  Scenario a = three_replicas(1), b = a;
  b.network.link.bandwidth_bytes_per_s *= 2;
  EXPECT_NE(training_key(a), training_key(b));
  a.parallel.data_sync.deadline_seconds = b.parallel.data_sync.deadline_seconds = -1;
  EXPECT_EQ(training_key(a), training_key(b));
}

}  // namespace
}  // namespace lowband::parallel::test
