// OuterSync (runtime/sync/outer_sync.h) across replicas that are threads of an
// in-process world: DiLoCo's outer step against its definition, SparseLoCo's
// against its pieces, every rank bit-identical afterwards, the recorded bytes,
// and checkpoints that resume bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "common/binary_io.h"
#include "comm/in_process.h"
#include "comm/recording.h"
#include "runtime/sync/aggregate.h"
#include "runtime/sync/outer_sync.h"
#include "runtime/sync/pack.h"
#include "tests/runtime/test_sparseloco_support.h"

namespace lowband::sync::test {
namespace {

model::ParamLayout small_layout() {
  ModelConfig c;
  c.layers = 2;
  c.d_model = 32;
  c.heads = 2;
  c.kv_heads = 2;
  c.ffn_hidden = 80;
  c.vocab = 50;
  c.seq_len = 8;
  return model::ParamLayout(c);
}

DataSyncConfig diloco(double lr, double momentum) {
  DataSyncConfig d;
  d.method = DataSyncMethod::diloco;
  d.inner_steps = 3;
  d.outer_lr = lr;
  d.outer_momentum = momentum;
  return d;
}

DataSyncConfig sparseloco(int k, int bits, double beta, SparseAverage average) {
  DataSyncConfig d;
  d.method = DataSyncMethod::sparseloco;
  d.inner_steps = 3;
  d.outer_lr = 1.0;
  d.topk_per_chunk = k;
  d.chunk = 64;
  d.value_bits = bits;
  d.error_decay = beta;
  d.average = average;
  return d;
}

// Replica r's weights after its inner steps of outer round `round`: θ_start plus its own drift.
std::vector<float> inner_steps(const std::vector<float>& start, int r, int round) {
  std::vector<float> theta = start;
  const auto drift = normal_values(int64_t(start.size()), 1e-2, unsigned(1000 * round + r));
  for (size_t i = 0; i < theta.size(); ++i) theta[i] += drift[i];
  return theta;
}

// R replicas, `rounds` outer steps; returns each rank's parameters after each round.
std::vector<std::vector<std::vector<float>>> run_replicas(const DataSyncConfig& config, int replicas, int rounds) {
  const model::ParamLayout layout = small_layout();
  const std::vector<float> theta0 = normal_values(layout.count(), 0.1, 77u);
  std::vector<std::vector<std::vector<float>>> after(static_cast<size_t>(rounds), std::vector<std::vector<float>>(size_t(replicas)));
  comm::InProcessWorld world(replicas);
  world.run([&](comm::Communicator& group) {
    std::vector<float> params = theta0;
    OuterSync outer(config, layout, params.data());
    for (int round = 0; round < rounds; ++round) {
      params = inner_steps(params, group.rank(), round);
      const OuterStats stats = outer.outer_step(group, params.data());
      EXPECT_EQ(stats.outer_step, round + 1);
      EXPECT_EQ(stats.wire_bytes, double(outer.message_bytes()));
      after[size_t(round)][size_t(group.rank())] = params;
      EXPECT_EQ(outer.theta_start(), params);
    }
  });
  return after;
}

void expect_identical_on_every_rank(const std::vector<std::vector<float>>& ranks) {
  for (size_t r = 1; r < ranks.size(); ++r)
    ASSERT_EQ(std::memcmp(ranks[r].data(), ranks[0].data(), ranks[0].size() * sizeof(float)), 0) << "rank " << r;
}

TEST(OuterSync, SyncsAfterEveryHInnerSteps) {
  const model::ParamLayout layout = small_layout();
  std::vector<float> p(size_t(layout.count()), 0.0f);
  const OuterSync outer(diloco(0.7, 0.9), layout, p.data());  // H = 3
  std::vector<int> at;
  for (int step = 0; step < 10; ++step)
    if (outer.syncs_at(step)) at.push_back(step);
  EXPECT_EQ(at, (std::vector<int>{2, 5, 8}));
  EXPECT_THROW(OuterSync(DataSyncConfig{}, layout, p.data()), std::invalid_argument);  // all_reduce
}

// A pipeline stage's part and a tied-embedding model: the chunks cover the part's
// flat buffer exactly, and two replicas of the part stay identical.
TEST(OuterSync, WorksOnAStagesPartAndATiedModel) {
  ModelConfig tied = small_layout().config();
  tied.tie_embeddings = true;
  const model::ParamLayout stage(small_layout().config(), model::StageSpan{1, 1, false, true});
  for (const model::ParamLayout& part : {model::ParamLayout(tied), stage}) {
    const ChunkPlan plan = plan_chunks(part, 64);
    EXPECT_EQ(plan.elements, part.count());
    std::vector<std::vector<float>> after(2);
    comm::InProcessWorld world(2);
    world.run([&](comm::Communicator& group) {
      std::vector<float> params = normal_values(part.count(), 0.1, 8u);
      OuterSync outer(sparseloco(4, 2, 0.95, SparseAverage::all), part, params.data());
      params = inner_steps(params, group.rank(), 0);
      outer.outer_step(group, params.data());
      after[size_t(group.rank())] = params;
    });
    EXPECT_EQ(after[0], after[1]);
  }
}

// DiLoCo with H = 1, outer lr 1 and no momentum is the replicas' mean: exactly,
// θ_new = fl(θ_start − fl(S / R)) with S the float32 sum of fl(θ_start − θ_r) in
// the all-reduce's order (comm::sum_in_ring_order), so |θ_new − mean_r θ_r| is a
// few float32 roundings of |θ|; with one inner step each, this is synchronous data
// parallelism on the replicas' combined batch when the inner step is plain SGD.
TEST(OuterSync, DilocoWithLrOneAndNoMomentumGivesTheReplicasMean) {
  const int R = 3;
  const auto after = run_replicas(diloco(1.0, 0.0), R, 1);
  expect_identical_on_every_rank(after[0]);
  const model::ParamLayout layout = small_layout();
  const std::vector<float> theta0 = normal_values(layout.count(), 0.1, 77u);
  std::vector<std::vector<float>> thetas;
  for (int r = 0; r < R; ++r) thetas.push_back(inner_steps(theta0, r, 0));
  std::vector<std::vector<float>> deltas(R, std::vector<float>(theta0.size()));
  std::vector<const void*> by_rank;
  for (int r = 0; r < R; ++r) {
    for (size_t i = 0; i < theta0.size(); ++i) deltas[size_t(r)][i] = theta0[i] - thetas[size_t(r)][i];
    by_rank.push_back(deltas[size_t(r)].data());
  }
  std::vector<float> sums(theta0.size());
  comm::sum_in_ring_order(by_rank, sums.data(), comm::even_counts(int64_t(sums.size()), R), comm::DType::f32);
  for (size_t i = 0; i < theta0.size(); ++i) {
    const float S = sums[i];
    ASSERT_EQ(after[0][0][i], float(double(theta0[i]) - double(float(double(S) / R)))) << i;
    double mean = 0;
    for (int r = 0; r < R; ++r) mean += thetas[size_t(r)][i];
    mean /= R;
    ASSERT_NEAR(after[0][0][i], mean, 8 * std::ldexp(1.0, -24) * (std::fabs(mean) + 0.1)) << i;
  }
}

// Nesterov over two rounds against the definition in float64:
// g = mean_r Δ_r, m <- μm + g, θ <- θ_start − lr(g + μm).
TEST(OuterSync, DilocoNesterovMatchesItsDefinitionOverTwoRounds) {
  const int R = 2;
  const double lr = 0.7, mu = 0.9;
  const auto after = run_replicas(diloco(lr, mu), R, 2);
  const model::ParamLayout layout = small_layout();
  std::vector<double> m(size_t(layout.count()), 0.0);
  const std::vector<float> theta0 = normal_values(layout.count(), 0.1, 77u);
  for (int round = 0; round < 2; ++round) {
    expect_identical_on_every_rank(after[size_t(round)]);
    // The replicas drift from the float32 θ_start they hold.
    const std::vector<float> held = round == 0 ? theta0 : after[0][0];
    std::vector<double> g(m.size(), 0.0);
    for (int r = 0; r < R; ++r) {
      const auto theta = inner_steps(held, r, round);
      for (size_t i = 0; i < g.size(); ++i) g[i] += (double(held[i]) - theta[i]) / R;
    }
    for (size_t i = 0; i < g.size(); ++i) {
      m[i] = mu * m[i] + g[i];
      const double expected = double(held[i]) - lr * (g[i] + mu * m[i]);
      ASSERT_NEAR(after[size_t(round)][0][i], expected, 1e-6) << "round " << round << " i " << i;
    }
  }
}

// SparseLoCo over three replicas: every rank ends bit-identical, equal to θ_start −
// aggregate(the replicas' messages), each message compressed with that replica's
// own error buffer (computed here one replica after another).
TEST(OuterSync, SparseLocoRanksAgreeAndApplyTheAggregate) {
  for (SparseAverage average : {SparseAverage::all, SparseAverage::chosen}) {
    const int R = 3;
    const DataSyncConfig config = sparseloco(6, 2, 0.95, average);
    const auto after = run_replicas(config, R, 2);
    const model::ParamLayout layout = small_layout();
    const ChunkPlan plan = plan_chunks(layout, 64);
    const SparseCodec codec{6, 2};
    std::vector<std::vector<float>> errors(static_cast<size_t>(R), std::vector<float>(size_t(layout.count()), 0.0f));
    std::vector<float> start = normal_values(layout.count(), 0.1, 77u);
    for (int round = 0; round < 2; ++round) {
      expect_identical_on_every_rank(after[size_t(round)]);
      std::vector<SparseMessage> messages;
      for (int r = 0; r < R; ++r) {
        const auto theta = inner_steps(start, r, round);
        std::vector<float> delta(start.size());
        for (size_t i = 0; i < delta.size(); ++i) delta[i] = start[i] - theta[i];
        messages.push_back(codec.compress(plan, delta.data(), errors[size_t(r)].data(), 0.95));
      }
      std::vector<float> g(start.size());
      aggregate(plan, codec, messages, average, g.data());
      for (size_t i = 0; i < g.size(); ++i) start[i] = float(double(start[i]) - double(g[i]));
      ASSERT_EQ(after[size_t(round)][0], start) << "round " << round;
    }
  }
}

// Density 100 %, float32 values, β = 0: SparseLoCo sends Δ itself, so it is DiLoCo
// with plain outer SGD (momentum 0), up to the rounding of the sum (float64 here,
// the float32 all-reduce there): a few ulps of |θ|.
TEST(OuterSync, DenseUnquantisedSparseLocoIsDilocoWithPlainSgd) {
  const int R = 2;
  DataSyncConfig dense = sparseloco(64, 32, 0.0, SparseAverage::all);
  dense.outer_lr = 0.8;
  const auto a = run_replicas(dense, R, 2);
  const auto b = run_replicas(diloco(0.8, 0.0), R, 2);
  for (int round = 0; round < 2; ++round)
    for (size_t i = 0; i < a[size_t(round)][0].size(); ++i)
      ASSERT_NEAR(a[size_t(round)][0][i], b[size_t(round)][0][i], 1e-7 * (1 + std::fabs(b[size_t(round)][0][i])))
          << round << " " << i;
}

// The exchange is one all-gather of R packed messages (sparseloco) or one
// all-reduce of 4 bytes per parameter (diloco), labelled "pseudo_grad".
TEST(OuterSync, RecordsOneExchangeOfThePackedBytes) {
  const model::ParamLayout layout = small_layout();
  for (const DataSyncConfig& config : {sparseloco(8, 2, 0.95, SparseAverage::all), diloco(0.7, 0.9)}) {
    const int R = 3;
    std::vector<comm::RankLog> logs(static_cast<size_t>(R));
    std::vector<int64_t> message(static_cast<size_t>(R));
    comm::InProcessWorld world(R);
    world.run([&](comm::Communicator& inner) {
      comm::RecordingCommunicator group(inner, logs[size_t(inner.rank())]);
      std::vector<float> params = normal_values(layout.count(), 0.1, 1u);
      OuterSync outer(config, layout, params.data());
      params = inner_steps(params, group.rank(), 0);
      outer.outer_step(group, params.data());
      message[size_t(group.rank())] = outer.message_bytes();
    });
    const bool sparse = config.method == DataSyncMethod::sparseloco;
    const int64_t expected = sparse ? packed_bytes(plan_chunks(layout, 64), SparseCodec{8, 2}) : 4 * layout.count();
    for (int r = 0; r < R; ++r) {
      ASSERT_EQ(logs[size_t(r)].events().size(), 1u);
      const comm::Event& e = logs[size_t(r)].events()[0];
      EXPECT_EQ(e.type, sparse ? comm::EventType::all_gather : comm::EventType::all_reduce);
      EXPECT_EQ(e.kind, "pseudo_grad");
      EXPECT_EQ(message[size_t(r)], expected);
      EXPECT_EQ(e.bytes, double(sparse ? R * expected : expected));  // S: the gathered buffer, or the reduced one
    }
  }
}

// Saved after one outer step and loaded into a fresh OuterSync, the next outer
// step gives the same bits as going on without the checkpoint.
TEST(OuterSync, CheckpointResumesBitForBit) {
  const model::ParamLayout layout = small_layout();
  for (const DataSyncConfig& config : {sparseloco(5, 2, 0.9, SparseAverage::chosen), diloco(0.7, 0.9)}) {
    const int R = 2;
    std::vector<std::vector<float>> straight(static_cast<size_t>(R)), resumed(static_cast<size_t>(R));
    std::vector<std::string> states(static_cast<size_t>(R));
    comm::InProcessWorld world(R);
    world.run([&](comm::Communicator& group) {
      const size_t me = size_t(group.rank());
      std::vector<float> params = normal_values(layout.count(), 0.1, 2u);
      OuterSync outer(config, layout, params.data());
      params = inner_steps(params, group.rank(), 0);
      outer.outer_step(group, params.data());
      std::ostringstream saved;
      outer.save_state(saved);
      states[me] = saved.str();
      const std::vector<float> at_checkpoint = params;

      params = inner_steps(at_checkpoint, group.rank(), 1);
      outer.outer_step(group, params.data());
      straight[me] = params;

      std::vector<float> zeros(params.size(), 0.0f);
      OuterSync fresh(config, layout, zeros.data());
      std::istringstream in(states[me]);
      fresh.load_state(in);
      std::ostringstream again;
      fresh.save_state(again);
      EXPECT_EQ(again.str(), states[me]);
      params = inner_steps(at_checkpoint, group.rank(), 1);
      const OuterStats stats = fresh.outer_step(group, params.data());
      EXPECT_EQ(stats.outer_step, 2);
      resumed[me] = params;
    });
    for (int r = 0; r < R; ++r) EXPECT_EQ(resumed[size_t(r)], straight[size_t(r)]);
    if (config.method == DataSyncMethod::sparseloco) {
      std::vector<float> p(size_t(layout.count()), 0.0f);
      OuterSync other(diloco(0.7, 0.9), layout, p.data());  // another method's state
      std::istringstream in(states[0]);
      EXPECT_THROW(other.load_state(in), binary::BinaryFormatError);
      OuterSync same(config, layout, p.data());
      std::istringstream cut(states[0].substr(0, states[0].size() - 3));
      EXPECT_THROW(same.load_state(cut), binary::BinaryFormatError);
      EXPECT_EQ(same.error(), std::vector<float>(p.size(), 0.0f));  // a failed load leaves the state as it was
    }
  }
}

}  // namespace
}  // namespace lowband::sync::test
