// Synchronous data parallelism: R replicas, each a whole layout (context ranks,
// or pipeline stages with context ranks inside), each taking its block of the
// batch and summing gradients with the other replicas before the optimiser,
// must train as ONE replica on the whole batch: the same losses and parameters
// to fp32 rounding (only the sums' order differs). The recorded graph carries
// the replicas' gradient sums between the ranks holding the same part, and a
// checkpointed run resumes bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/parallel/layout_trainer.h"
#include "sim/collectives.h"
#include "sim/replay.h"
#include "tests/runtime/test_numeric_support.h"
#include "tests/runtime/test_pipeline_support.h"

namespace lowband::parallel::test {
namespace {

using lowband::test_support::rel_diff;
using namespace pipeline_support;  // NOLINT(google-build-using-namespace): the tests' fixtures

// One replica of P stages x C context ranks (P = 1: context parallelism alone).
Scenario one_replica(int P, int C, int M = 1) {
  Scenario s = tiny_pipeline(P, M, PipelineSchedule::one_f_one_b);
  s.parallel.context = C;
  s.training.grad_clip = 1.0;  // the replicas' norm must be the whole batch's too
  return s;
}

Scenario replicated(Scenario s, int R) {
  s.parallel.data = R;
  return s;
}

// Every rank's parameters, in rank order, after `steps` steps on batches 0, 1, ...
struct Trained {
  std::vector<double> losses;
  std::vector<std::vector<float>> params;  // per rank
};
// Through the trainer of every layout (any replica count, one included).
Trained train(const Scenario& s, int steps) {
  LayoutTrainer t(s, ComputeTiming::profile);
  Trained out;
  for (int k = 0; k < steps; ++k) {
    const TestBatch b = make_batch(s, k);
    out.losses.push_back(t.train_step(k, b.inputs.data(), b.targets.data(), s.training.batch_size, false).loss);
  }
  for (int r = 0; r < t.ranks(); ++r) out.params.push_back(t.rank(r).model().params_to_host());
  return out;
}

struct Case {
  int P, C, M, R;
};

class SyncDataEqualsOneReplica : public ::testing::TestWithParam<Case> {};

TEST_P(SyncDataEqualsOneReplica, LossesAndParameters) {
  const Case& c = GetParam();
  const Scenario one = one_replica(c.P, c.C, c.M);
  // One replica is the layout itself (its numbers are the separate trainers' of
  // before, bit for bit: scripts/experiments/trainer-bit-identity.sh).
  const Trained reference = train(one, 3);
  const Trained data = train(replicated(one, c.R), 3);
  for (int k = 0; k < 3; ++k)
    EXPECT_NEAR(data.losses[size_t(k)], reference.losses[size_t(k)], 1e-5 * std::abs(reference.losses[size_t(k)]))
        << "step " << k;
  const size_t per_replica = reference.params.size();
  ASSERT_EQ(data.params.size(), per_replica * size_t(c.R));
  for (size_t r = 0; r < data.params.size(); ++r) {
    const std::vector<float>& want = reference.params[r % per_replica];
    ASSERT_EQ(data.params[r].size(), want.size());
    EXPECT_LT(rel_diff(data.params[r].data(), want.data(), int64_t(want.size())), 1e-5) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, SyncDataEqualsOneReplica,
                         ::testing::Values(Case{1, 1, 1, 2}, Case{1, 2, 1, 2}, Case{1, 1, 1, 4}, Case{2, 1, 2, 2},
                                           Case{2, 2, 1, 2}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const Case& c = info.param;
                           return "R" + std::to_string(c.R) + "_P" + std::to_string(c.P) + "xC" + std::to_string(c.C) +
                                  "_M" + std::to_string(c.M);
                         });

// The gradient sums between replicas: "grad_sync" transfers only between ranks
// holding the same part (replica-major ranks: r and r ± ranks per replica).
TEST(SyncData, GradientSumsGoBetweenTheSamePartsOfReplicas) {
  const Scenario s = replicated(one_replica(2, 1, 2), 2);
  LayoutTrainer t(s, ComputeTiming::profile);
  const TestBatch b = make_batch(s, 0);
  const StepRecord rec = t.train_step(0, b.inputs.data(), b.targets.data(), s.training.batch_size);
  int syncs = 0;
  for (const sim::Task& task : rec.graph.tasks()) {
    if (task.kind != sim::TaskKind::transfer || task.kind_tag != "grad_sync") continue;
    EXPECT_EQ(std::abs(task.peer - task.rank), 2) << task.rank << " -> " << task.peer;
    ++syncs;
  }
  EXPECT_GT(syncs, 0);
  double act = 0;
  for (int r = 0; r < rec.graph.ranks(); ++r) act += rec.graph.bytes_sent(r, "act");
  EXPECT_GT(act, 0) << "each replica's stages pass their boundaries";
}

TEST(SyncData, ResumesBitIdentically) {
  const Scenario s = replicated(one_replica(1, 2), 2);
  expect_resumes_bit_identically<LayoutTrainer>(s, 2, 4);
}

Scenario local(Scenario s, DataSyncMethod method, int H) {
  s.parallel.data_sync.method = method;
  s.parallel.data_sync.inner_steps = H;
  if (method == DataSyncMethod::diloco) s.parallel.data_sync.outer_lr = 1.0, s.parallel.data_sync.outer_momentum = 0;
  else s.parallel.data_sync.outer_lr = 1.0, s.parallel.data_sync.topk_per_chunk = 16;
  return s;
}

std::vector<float> params_of(LayoutTrainer& t, int rank) { return t.rank(rank).model().params_to_host(); }

// DiLoCo with H = 1, outer lr 1 and no momentum: θ_{t+1} = θ_t − mean_r(θ_t − θ_r)
// = mean_r(θ_r), where θ_r is replica r's parameters after its own AdamW step on
// its own block of the batch (from θ_t, with its own AdamW moments). So it is
// parameter averaging after every step, not synchronous data parallelism (that
// averages the gradients before one AdamW step; the two agree only for an inner
// SGD). Reference: R one-replica trainers stepped alone, their parameters
// averaged after every step (each keeps its moments).
TEST(LocalSteps, DilocoWithOneInnerStepAveragesTheReplicasParameters) {
  const int R = 2, steps = 3;
  const Scenario base = one_replica(1, 2);
  const Scenario s = local(replicated(base, R), DataSyncMethod::diloco, 1);
  LayoutTrainer t(s, ComputeTiming::profile);
  Scenario alone = base;
  alone.training.batch_size /= R;
  std::vector<std::unique_ptr<LayoutTrainer>> refs;
  for (int q = 0; q < R; ++q) refs.push_back(std::make_unique<LayoutTrainer>(alone, ComputeTiming::profile));
  const int64_t per = int64_t(alone.training.batch_size) * s.model.seq_len;
  for (int k = 0; k < steps; ++k) {
    const TestBatch b = make_batch(s, k);
    t.train_step(k, b.inputs.data(), b.targets.data(), s.training.batch_size, false);
    for (int q = 0; q < R; ++q)
      refs[size_t(q)]->train_step(k, b.inputs.data() + q * per, b.targets.data() + q * per, alone.training.batch_size,
                                  false);
    for (int r = 0; r < refs[0]->ranks(); ++r) {  // average rank r's part over the replicas
      std::vector<double> mean(params_of(*refs[0], r).size(), 0.0);
      for (auto& ref : refs) {
        const std::vector<float> p = params_of(*ref, r);
        for (size_t i = 0; i < p.size(); ++i) mean[i] += double(p[i]) / R;
      }
      const std::vector<float> avg(mean.begin(), mean.end());
      for (auto& ref : refs) std::copy(avg.begin(), avg.end(), ref->rank(r).model().params());
      for (int q = 0; q < R; ++q) {
        const std::vector<float> got = params_of(t, q * refs[0]->ranks() + r);
        EXPECT_LT(rel_diff(got.data(), avg.data(), int64_t(avg.size())), 1e-6) << "step " << k << " rank " << r;
      }
    }
  }
}

// SparseLoCo with H = 2: the replicas drift apart on their own blocks, then the
// outer step leaves every replica's parameters bit-identical; the exchange is
// recorded as "pseudo_grad" with the packed message's bytes.
TEST(LocalSteps, SparselocoReplicasMeetAfterEachOuterStep) {
  const int R = 2;
  const Scenario s = local(replicated(one_replica(2, 1, 2), R), DataSyncMethod::sparseloco, 2);
  LayoutTrainer t(s, ComputeTiming::profile);
  const int per_replica = t.ranks() / R;
  for (int k = 0; k < 4; ++k) {
    const TestBatch b = make_batch(s, k);
    const StepRecord rec = t.train_step(k, b.inputs.data(), b.targets.data(), s.training.batch_size);
    EXPECT_TRUE(std::isfinite(rec.loss));
    EXPECT_EQ(rec.weight_sync, k % 2 == 1);
    double pseudo = 0;
    for (int r = 0; r < rec.graph.ranks(); ++r) pseudo += rec.graph.bytes_sent(r, "pseudo_grad");
    for (int r = 0; r < per_replica; ++r) {
      const std::vector<float> a = params_of(t, r), b2 = params_of(t, r + per_replica);
      if (k % 2 == 1) EXPECT_EQ(a, b2) << "step " << k << " rank " << r;
      else EXPECT_NE(a, b2) << "step " << k << " rank " << r;
    }
    if (k % 2 == 0) EXPECT_EQ(pseudo, 0) << "no exchange between outer steps";
    else EXPECT_GT(pseudo, 0);
  }
}

// data_sync.exchange relay changes the modelled traffic only: the same losses
// and parameters bit for bit as the ring all-gather. On the sync step each
// replica sends its message S once (to the relay, node 7, on a 10 Gbps link)
// instead of R − 1 times, the relay sends each on R − 1 times, and the step
// takes what the closed forms say more or less (the compute is the same).
TEST(LocalSteps, RelayExchangeTrainsBitForBitAsTheAllGather) {
  const int R = 3;
  Scenario ring = local(replicated(one_replica(1, 1), R), DataSyncMethod::sparseloco, 2);
  ring.training.batch_size = 2 * R;
  Scenario relay = ring;
  relay.parallel.data_sync.exchange = DataSyncExchange::relay;
  relay.parallel.data_sync.relay_node = 7;
  relay.network.node_links.push_back(sim::NodeLink{7, sim::Link{10e9 / 8, 1e-3}});
  LayoutTrainer a(ring, ComputeTiming::profile), b(relay, ComputeTiming::profile);
  for (int k = 0; k < 4; ++k) {
    SCOPED_TRACE("step " + std::to_string(k));
    const TestBatch batch = make_batch(ring, k);
    const StepRecord ra = a.train_step(k, batch.inputs.data(), batch.targets.data(), ring.training.batch_size);
    const StepRecord rb = b.train_step(k, batch.inputs.data(), batch.targets.data(), ring.training.batch_size);
    EXPECT_EQ(ra.loss, rb.loss);
    for (int r = 0; r < a.ranks(); ++r) EXPECT_EQ(params_of(a, r), params_of(b, r)) << "rank " << r;
    if (k % 2 == 0) {
      EXPECT_EQ(rb.graph.ranks(), R) << "no sync, no relay";
      continue;
    }
    const double S = ra.graph.bytes_sent(0, "pseudo_grad") / (R - 1);
    ASSERT_GT(S, 0);
    ASSERT_EQ(rb.graph.ranks(), 8);
    for (int r = 0; r < R; ++r) {
      EXPECT_EQ(ra.graph.bytes_sent(r, "pseudo_grad"), (R - 1) * S);
      EXPECT_EQ(rb.graph.bytes_sent(r, "pseudo_grad"), S);
    }
    EXPECT_EQ(rb.graph.bytes_sent(7, "pseudo_grad"), R * (R - 1) * S);
    // 300 Mbps / 1 ms access links (the built-in star): the ring's R − 1 rounds
    // against one upload and R − 1 downloads through the relay.
    const double B = 300e6 / 8, L = 1e-3;
    const double ring_s = sim::ring_all_gather_seconds(R, R * S, B, 2 * L);
    const double relay_s = sim::relay_all_gather_seconds(R, R * S, B, B, 10e9 / 8, 10e9 / 8, 2 * L);
    const double difference = sim::replay(relay.network, rb.graph).step_seconds - sim::replay(relay.network, ra.graph).step_seconds;
    EXPECT_NEAR(difference, relay_s - ring_s, 1e-3 * ring_s);
  }
}

TEST(LocalSteps, ResumesBitIdenticallyBetweenOuterSteps) {
  const Scenario s = local(replicated(one_replica(1, 1), 2), DataSyncMethod::sparseloco, 2);
  expect_resumes_bit_identically<LayoutTrainer>(s, 3, 5);
}

TEST(SyncData, BadLayoutsNameTheirKey) {
  auto key_of = [](const Scenario& s) {
    try {
      LayoutTrainer t(s, ComputeTiming::profile);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  Scenario s = replicated(one_replica(1, 1), 3);  // 4 sequences over 3 replicas
  EXPECT_NE(key_of(s).find("training.batch_size"), std::string::npos) << key_of(s);
  for (WeightSync w : {WeightSync::sparse, WeightSync::sparse_grad, WeightSync::topk_grad, WeightSync::sparse_update,
                       WeightSync::lowrank_grad}) {
    s = replicated(one_replica(1, 1), 2);
    s.compression.weight_sync = w;
    EXPECT_NE(key_of(s).find("compression.weight_sync"), std::string::npos) << weight_sync_name(w) << ": " << key_of(s);
  }
  s = one_replica(1, 1);
  s.parallel.replicas = {ReplicaConfig{1, 1, {0}, false}, ReplicaConfig{1, 2, {1, 2}, false}};
  s.parallel.placement = {0, 1, 2};
  s.parallel.data = 2;
  EXPECT_NE(key_of(s).find("parallel.replicas.1"), std::string::npos) << key_of(s);
}

}  // namespace
}  // namespace lowband::parallel::test
