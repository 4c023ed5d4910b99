// The error-feedback weight syncs of context-parallel ranks (sync/replica_sync.h:
// sparse_grad, topk_grad, sparse_update, lowrank_grad): the error-feedback identity against a
// float64 reference, the 100 % relations (sparse_grad and topk_grad with float32
// values take the all-reduce's steps, bit for bit on two ranks; sparse_update takes the sparse
// weight average's to float32 rounding), ranks that stay bit-identical, the
// recorded bytes against the formula and the estimate's graph, checkpoints that
// resume bit for bit, and the scenario keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "comm/in_process.h"
#include "common/binary_io.h"
#include "common/error.h"
#include "runtime/parallel/dry_steps.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/load.h"
#include "runtime/sync/pack.h"
#include "runtime/sync/replica_sync.h"
#include "tests/runtime/test_graph_support.h"

namespace lowband::parallel::test {
namespace {

Scenario small(const std::vector<std::string>& extra) {
  std::vector<std::string> sets = {"model.layers=2",      "model.d_model=32", "model.heads=4",
                                   "model.kv_heads=2",    "model.ffn_hidden=64", "model.seq_len=64",
                                   "network.nodes=4",     "parallel.context=4", "training.batch_size=2",
                                   "training.lr=0.01",    "training.lr_warmup_steps=0", "training.steps=8"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return builtin_scenario("default", sets);
}

std::vector<int32_t> tokens(const Scenario& s, int k) {
  std::vector<int32_t> out;
  uint64_t x = 4242 + 977 * uint64_t(k);
  for (int64_t i = 0; i < s.training.batch_size * s.model.seq_len; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    out.push_back(int32_t((x >> 33) % uint64_t(s.model.vocab)));
  }
  return out;
}

StepRecord step(LayoutTrainer& t, const Scenario& s, int k, bool record = false) {
  const auto in = tokens(s, k), tg = tokens(s, k + 1000);
  return t.train_step(k, in.data(), tg.data(), s.training.batch_size, record);
}

std::vector<float> params(LayoutTrainer& t, int rank) {
  const model::Model& m = t.model(rank);
  return std::vector<float>(m.params(), m.params() + m.param_count());
}

// Deterministic pseudo-gradients: rank r, call c.
void fill(float* g, int64_t n, int r, int c) {
  uint64_t x = 99 + 1000003 * uint64_t(r) + 7919 * uint64_t(c);
  for (int64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    g[i] = float((double((x >> 11) % 2000001) - 1000000.0) * 1e-6);
  }
}

// The aggregate sparse_grad's exchange forms from what the ranks sent (sent[r],
// dense): the slice's values all-reduced, each slot in the all-reduce's ring order
// (comm::sum_in_ring_order), then scattered back; a coordinate drawn twice sends
// its value in its first slot and 0 in the later ones (exchange_slice).
std::vector<float> sparse_grad_aggregate(const Scenario& s, const model::ParamLayout& layout,
                                         const std::vector<std::vector<double>>& sent, int step) {
  const std::vector<int64_t> index =
      sync::sparse_sync_indices(layout, s.compression.sync_fraction, s.training.seed, step);
  const int P = int(sent.size());
  std::vector<std::vector<float>> slots(size_t(P), std::vector<float>(index.size()));
  std::vector<const void*> by_rank;
  for (int r = 0; r < P; ++r) {
    std::vector<bool> taken(size_t(layout.count()), false);
    for (size_t j = 0; j < index.size(); ++j) {
      const size_t i = size_t(index[j]);
      slots[size_t(r)][j] = taken[i] ? 0.0f : float(sent[size_t(r)][i]);
      taken[i] = true;
    }
    by_rank.push_back(slots[size_t(r)].data());
  }
  std::vector<float> summed(index.size());
  comm::sum_in_ring_order(by_rank, summed.data(), comm::even_counts(int64_t(index.size()), P), comm::DType::f32);
  std::vector<float> out(size_t(layout.count()), 0.0f);
  for (size_t j = 0; j < index.size(); ++j) out[size_t(index[j])] += summed[j];
  return out;
}

// Two exchanges on P = 4 in-process ranks; checks, per exchange, that what the
// ranks took out of their error buffers sums to the aggregate: exactly as the
// exchange adds (sparse_grad: the all-reduce's ring order; topk_grad: the gathered
// messages in rank order) when `exact`, else to `tolerance` of the float64 sum.
void check_error_feedback(const std::vector<std::string>& sets, bool exact, double tolerance = 1e-6) {
  const Scenario s = small(sets);
  const int P = s.parallel.context;
  const kernels::Backend& k = kernels::backend(kernels::Device::cpu);
  std::vector<std::unique_ptr<sync::ReplicaSync>> syncs;
  for (int r = 0; r < P; ++r) syncs.push_back(std::make_unique<sync::ReplicaSync>(s, k));
  comm::InProcessWorld world(P);
  std::vector<std::vector<double>> sent(static_cast<size_t>(P));
  std::vector<std::vector<float>> aggregate(static_cast<size_t>(P));
  for (int c = 0; c < 2; ++c) {
    world.run([&](comm::Communicator& comm) {
      const int r = comm.rank();
      sync::ReplicaSync& rs = *syncs[size_t(r)];
      model::Model m(s.model, s.training.seed);
      const int64_t n = m.param_count();
      fill(m.grads(), n, r, c);
      std::vector<float> e_plus_g = rs.error();  // e before (empty: zero) + g, rounded once
      e_plus_g.resize(size_t(n), 0.0f);
      for (int64_t i = 0; i < n; ++i) e_plus_g[size_t(i)] += m.grads()[i];
      rs.exchange_gradients(comm, m, c);
      const std::vector<float>& after = rs.error();
      // e after = e before + g − ĝ_r: what the rank sent is ĝ_r = e before + g − e after.
      sent[size_t(r)].resize(size_t(n));
      for (int64_t i = 0; i < n; ++i) {
        sent[size_t(r)][size_t(i)] = double(e_plus_g[size_t(i)]) - double(after[size_t(i)]);
        if (exact && after[size_t(i)] != 0.0f) {
          EXPECT_EQ(after[size_t(i)], e_plus_g[size_t(i)]) << i;
        }
      }
      aggregate[size_t(r)].assign(m.grads(), m.grads() + n);
    });
    const size_t n = aggregate[0].size();
    const bool sliced = s.compression.weight_sync == WeightSync::sparse_grad;
    const std::vector<float> sliced_sum =
        sliced ? sparse_grad_aggregate(s, model::ParamLayout(s.model), sent, c) : std::vector<float>();
    int64_t nonzero = 0;
    for (size_t i = 0; i < n; ++i) {
      float sum = 0;  // topk_grad: the gathered messages added in rank order, float32
      double sum64 = 0;
      for (int r = 0; r < P; ++r) sum += float(sent[size_t(r)][i]), sum64 += sent[size_t(r)][i];
      if (sliced) sum = sliced_sum[i];
      for (int r = 1; r < P; ++r) ASSERT_EQ(aggregate[size_t(r)][i], aggregate[0][i]) << "ranks differ at " << i;
      if (exact)  // every sent value is e + g itself, so each difference above is exact
        ASSERT_EQ(aggregate[0][i], sum) << "exchange " << c << ", element " << i;
      else  // quantised values: e − v is rounded once per rank
        ASSERT_NEAR(aggregate[0][i], sum64, tolerance * (1 + std::fabs(sum64))) << "exchange " << c << ", element " << i;
      nonzero += aggregate[0][i] != 0.0f;
    }
    EXPECT_GT(nonzero, 0);
    if (s.compression.weight_sync != WeightSync::lowrank_grad) {
      EXPECT_LT(double(nonzero), 0.5 * double(n));  // sparse: most coordinates wait in e
    }
  }
}

TEST(SparseGradSync, ErrorBufferKeepsExactlyWhatWasNotSent) {
  check_error_feedback({"compression.weight_sync=sparse_grad", "compression.sync_fraction=0.1"}, true);
}

TEST(SparseGradSync, TopkErrorBufferKeepsWhatWasNotSent) {
  check_error_feedback({"compression.weight_sync=topk_grad", "compression.sync_fraction=0.02",
                        "compression.sync_value_bits=32"},
                       true);
  check_error_feedback({"compression.weight_sync=topk_grad", "compression.sync_fraction=0.02"}, false);
}

// lowrank_grad's factors are rounded to float32 per rank: the identity holds to
// that rounding (float64 reference sum).
TEST(SparseGradSync, LowrankErrorBufferKeepsWhatWasNotSent) {
  check_error_feedback({"compression.weight_sync=lowrank_grad", "compression.sync_fraction=0.1"}, false, 1e-5);
}

// When the ranks' summed M (e + g) has rank <= r in every matrix, one PowerSGD
// round with any start Q whose product with it is not 0 recovers it: the
// aggregate is the all-reduce's sum (to float32 rounding) and e is left ~0.
TEST(SparseGradSync, LowrankRecoversALowRankSum) {
  const Scenario s = small({"compression.weight_sync=lowrank_grad", "compression.sync_fraction=0.05"});
  const int P = s.parallel.context;
  comm::InProcessWorld world(P);
  std::vector<std::vector<float>> got(static_cast<size_t>(P)), error(static_cast<size_t>(P));
  std::vector<double> want;
  const model::ParamLayout layout(s.model);
  want.assign(size_t(layout.count()), 0.0);
  auto value = [&](const model::TensorInfo& t, int64_t i, int r) {  // rank r's rank-1 matrix (1 + r)·u vᵀ
    const int64_t row = i / t.cols, col = i % t.cols;
    return float((1 + r) * std::sin(0.37 * double(row + 1) + double(t.offset)) * std::cos(0.11 * double(col + 3)));
  };
  for (const auto& t : layout.tensors())
    for (int64_t i = 0; i < t.count(); ++i)
      for (int r = 0; r < P; ++r) want[size_t(t.offset + i)] += double(value(t, i, r));
  world.run([&](comm::Communicator& comm) {
    sync::ReplicaSync rs(s, kernels::backend(kernels::Device::cpu));
    model::Model m(s.model, s.training.seed);
    for (const auto& t : layout.tensors())
      for (int64_t i = 0; i < t.count(); ++i) m.grads()[t.offset + i] = value(t, i, comm.rank());
    rs.exchange_gradients(comm, m, 0);
    got[size_t(comm.rank())].assign(m.grads(), m.grads() + m.param_count());
    error[size_t(comm.rank())] = rs.error();
  });
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[0][i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << i;
    for (int r = 0; r < P; ++r) ASSERT_NEAR(error[size_t(r)][i], 0.0, 1e-5) << i;
  }
}

// Steps `steps` times; returns every rank's parameters.
std::vector<std::vector<float>> train(const Scenario& s, int steps) {
  LayoutTrainer t(s, ComputeTiming::profile);
  for (int k = 0; k < steps; ++k) step(t, s, k);
  std::vector<std::vector<float>> out;
  for (int r = 0; r < s.parallel.context; ++r) out.push_back(params(t, r));
  return out;
}

// At 100 % sparse_grad and topk_grad add the same float32 values as the gradient
// all-reduce, in another order where P > 2: the all-reduce adds an element in the
// ring order of its segment of its bucket (comm/communicator.h), sparse_grad of its
// segment of the one slice, topk_grad in rank order. With two ranks every order is
// the same sum, so there the steps agree bit for bit; with four, to rounding.
TEST(SparseGradSync, FullDensityIsTheAllReduceBitForBitOnTwoRanks) {
  for (const int P : {2, 4}) {
    const std::vector<std::string> ranks = {"network.nodes=" + std::to_string(P), "parallel.context=" + std::to_string(P)};
    const auto reference = train(small(ranks), 3);
    for (auto sets : std::vector<std::vector<std::string>>{
             {"compression.weight_sync=sparse_grad", "compression.sync_fraction=1"},
             {"compression.weight_sync=topk_grad", "compression.sync_fraction=1", "compression.sync_value_bits=32"}}) {
      sets.insert(sets.end(), ranks.begin(), ranks.end());
      const auto got = train(small(sets), 3);
      for (size_t r = 0; r < got.size(); ++r) {
        if (P == 2) {
          EXPECT_EQ(std::memcmp(got[r].data(), reference[0].data(), got[r].size() * sizeof(float)), 0)
              << sets[0] << ", rank " << r;
          continue;
        }
        for (size_t i = 0; i < got[r].size(); ++i)
          ASSERT_NEAR(got[r][i], reference[0][i], 1e-6) << sets[0] << ", P " << P << ", rank " << r << ", " << i;
      }
    }
  }
}

// sparse_update at 100 %: before − mean_r(before − after_r) = mean_r after_r,
// which the sparse weight sync at fraction 1 computes directly (float64 mean):
// after one step equal up to float32 rounding of the updates. (Over more steps
// the 1-ulp differences grow: AdamW's first steps are ±lr whatever the size.)
TEST(SparseGradSync, FullDensityUpdateIsTheFullWeightAverage) {
  const auto average = train(small({"compression.weight_sync=sparse", "compression.sync_fraction=1"}), 1);
  const auto update = train(small({"compression.weight_sync=sparse_update", "compression.sync_fraction=1"}), 1);
  const auto plain = train(small({}), 1);  // and not the all-reduce's (the ranks' own moments)
  double worst = 0, apart = 0;
  for (size_t i = 0; i < average[0].size(); ++i) {
    const double scale = std::fabs(double(average[0][i])) + 1e-2;  // lr 0.01: an update's size
    worst = std::max(worst, std::fabs(double(update[0][i]) - double(average[0][i])) / scale);
    apart = std::max(apart, std::fabs(double(plain[0][i]) - double(average[0][i])) / scale);
  }
  EXPECT_LT(worst, 1e-6);
  EXPECT_GT(apart, 1e-2);
}

class SparseVariant : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(SparseVariant, RanksStayBitIdentical) {
  const Scenario s = small(GetParam());
  const auto got = train(s, 4);
  for (size_t r = 1; r < got.size(); ++r)
    EXPECT_EQ(std::memcmp(got[r].data(), got[0].data(), got[0].size() * sizeof(float)), 0) << "rank " << r;
  const auto plain = train(small({}), 4);  // and it is not the all-reduce
  EXPECT_NE(std::memcmp(got[0].data(), plain[0].data(), plain[0].size() * sizeof(float)), 0);
}

// The recorded step: its exchange's bytes are the formula, and its transfers are
// those of the estimate's graph.
TEST_P(SparseVariant, RecordedBytesAreTheFormulaAndTheEstimatesGraph) {
  const Scenario s = small(GetParam());
  const model::ParamLayout layout(s.model);
  double formula = 0;
  if (s.compression.weight_sync == WeightSync::lowrank_grad) {
    // The two factors of each matrix, r = round(fraction · n·m / (n + m)), and every vector whole.
    for (const auto& t : layout.tensors()) {
      const bool matrix = t.rows > 1 && t.cols > 1;
      const double r = std::min<double>(double(std::min(t.rows, t.cols)),
                                        std::max(1.0, std::round(s.compression.sync_fraction * double(t.count()) /
                                                                 double(t.rows + t.cols))));
      formula += (matrix ? double(t.rows + t.cols) * r : double(t.count())) * s.model.bytes_per_element;
    }
  } else if (s.compression.weight_sync == WeightSync::topk_grad) {
    // pack.h: 4·T·2^b + ceil(12·K/8) + ceil(b·K/8), K = Σ_chunks min(k, size).
    const sync::ChunkPlan plan = sync::plan_chunks(layout, 4096);
    const int64_t K = plan.kept(sync::topk_grad_per_chunk(s.compression.sync_fraction)), b = s.compression.sync_value_bits;
    formula = double(4 * plan.tensors * (int64_t(1) << b) + (12 * K + 7) / 8 + (b * K + 7) / 8);
  } else {
    for (const auto& t : layout.tensors())
      formula += double(std::max<int64_t>(1, std::llround(s.compression.sync_fraction * double(t.count())))) *
                 s.model.bytes_per_element;
  }
  EXPECT_EQ(sync::weight_sync_wire_bytes(s, layout), formula);
  LayoutTrainer t(s);
  const StepRecord rec = step(t, s, 0, /*record=*/true);
  const auto got = test_support::transfers(rec.graph);
  EXPECT_EQ(got, test_support::transfers(steady_step_graph(s, rec.weight_sync)));
  // Per rank over a ring of P: an all-reduce of S sends 2(P−1)/P·S, an all-gather of P·S sends (P−1)·S.
  const int P = s.parallel.context;
  double sent_by_rank0 = 0;
  for (const auto& [src, dst, bytes, kind] : got)
    if (src == 0 && kind == "grad_sync") sent_by_rank0 += bytes;
  const double expected = s.compression.weight_sync == WeightSync::topk_grad ? (P - 1) * formula
                                                                             : 2.0 * (P - 1) / P * formula;
  EXPECT_NEAR(sent_by_rank0, expected, 1e-9 * expected);
}

TEST_P(SparseVariant, RestoredTrainerContinuesBitForBit) {
  const Scenario s = small(GetParam());
  const auto straight = train(s, 5);
  LayoutTrainer first(s, ComputeTiming::profile);
  for (int k = 0; k < 3; ++k) step(first, s, k);
  std::ostringstream saved;
  first.save_state(saved);
  std::istringstream in(saved.str());
  LayoutTrainer resumed(s, ComputeTiming::profile);
  resumed.load_state(in);
  EXPECT_EQ(in.peek(), std::char_traits<char>::eof()) << "load_state left bytes unread";
  for (int k = 3; k < 5; ++k) step(resumed, s, k);
  for (int r = 0; r < s.parallel.context; ++r) {
    const auto got = params(resumed, r);
    EXPECT_EQ(std::memcmp(got.data(), straight[size_t(r)].data(), got.size() * sizeof(float)), 0) << "rank " << r;
  }
  // A checkpoint without the error buffers (an all_reduce run's) is refused.
  const Scenario plain = small({});
  LayoutTrainer old(plain, ComputeTiming::profile);
  step(old, plain, 0);
  std::ostringstream old_state;
  old.save_state(old_state);
  std::istringstream old_in(old_state.str());
  LayoutTrainer fresh(s, ComputeTiming::profile);
  EXPECT_THROW(fresh.load_state(old_in), binary::BinaryFormatError);
}

INSTANTIATE_TEST_SUITE_P(
    Variants, SparseVariant,
    ::testing::Values(std::vector<std::string>{"compression.weight_sync=sparse_grad", "compression.sync_fraction=0.05"},
                      std::vector<std::string>{"compression.weight_sync=topk_grad", "compression.sync_fraction=0.03"},
                      std::vector<std::string>{"compression.weight_sync=sparse_update",
                                               "compression.sync_fraction=0.05"},
                      std::vector<std::string>{"compression.weight_sync=lowrank_grad",
                                               "compression.sync_fraction=0.05"}),
    [](const ::testing::TestParamInfo<std::vector<std::string>>& info) {
      return std::string(info.param[0].substr(info.param[0].find('=') + 1));
    });

TEST(SparseGradSyncScenario, KeysParseRoundTripAndAreChecked) {
  const Scenario s = small({"compression.weight_sync=topk_grad", "compression.sync_value_bits=32"});
  EXPECT_EQ(s.compression.weight_sync, WeightSync::topk_grad);
  EXPECT_EQ(s.compression.sync_value_bits, 32);
  EXPECT_EQ(to_json(s)["compression"]["weight_sync"], "topk_grad");
  EXPECT_EQ(to_json(s)["compression"]["sync_value_bits"], 32);
  EXPECT_THROW(small({"compression.weight_sync=sparse_grad", "compression.sync_every=2"}), InputError);
  EXPECT_THROW(small({"compression.sync_value_bits=12"}), InputError);
  EXPECT_THROW(small({"compression.weight_sync=sparse_gradient"}), InputError);
}

}  // namespace
}  // namespace lowband::parallel::test
