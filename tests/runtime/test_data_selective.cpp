// Selective boundary compression: in a mix of replicas only those with
// compress_boundaries send subspace-compressed pipeline boundaries. All start
// from one function (the constrained model, E_fixed folded into the others'
// embedding); after an outer step a compressing replica's constrained tensors
// are the others' projected onto span(U) (float64 reference), its boundary is
// still rebuilt exactly, and its messages keep the subspace sizes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/compress/boundary_codec.h"
#include "runtime/compress/subspace_constraint.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/parallel/pipeline/rank.h"
#include "tests/runtime/test_numeric_support.h"
#include "tests/runtime/test_pipeline_support.h"

namespace lowband::parallel::test {
namespace {

using lowband::test_support::rel_diff;
using namespace pipeline_support;  // NOLINT(google-build-using-namespace): the tests' fixtures

constexpr int kRank = 8;  // U's columns (d_model 32)

Scenario mixed(DataSyncMethod method) { return mixed_replicas(BoundaryMethod::subspace, kRank, method); }

std::vector<float> params_of(LayoutTrainer& t, int rank) { return t.rank(rank).model().params_to_host(); }
const float* tensor(const std::vector<float>& p, LayoutTrainer& t, int rank, const std::string& name) {
  return p.data() + t.rank(rank).model().layout().find(name).offset;
}

// U·(Uᵀ·W) for W (d, cols), in float64.
std::vector<double> projected(const std::vector<float>& U, int d, int k, const float* W, int cols) {
  std::vector<double> out(size_t(d) * size_t(cols), 0.0);
  for (int c = 0; c < cols; ++c)
    for (int j = 0; j < k; ++j) {
      double z = 0;
      for (int i = 0; i < d; ++i) z += double(U[size_t(i * k + j)]) * double(W[size_t(i) * cols + c]);
      for (int i = 0; i < d; ++i) out[size_t(i) * cols + c] += double(U[size_t(i * k + j)]) * z;
    }
  return out;
}

// At the start every replica is one function: the compressing replica's
// E + E_fixed is the others' learnable embedding, bit for bit.
TEST(SelectiveCompression, EveryReplicaStartsAsOneFunction) {
  const Scenario s = mixed(DataSyncMethod::sparseloco);
  LayoutTrainer t(s, ComputeTiming::profile);
  const Scenario one = t.replica_scenario(1);
  const std::vector<float> fixed = compress::fixed_embedding(s.model.vocab, s.model.d_model, compress::boundary_seed(one));
  const std::vector<float> p0 = params_of(t, 0), p1 = params_of(t, 1), p3 = params_of(t, 3);
  const float *e0 = tensor(p0, t, 0, "embedding"), *e1 = tensor(p1, t, 1, "embedding"), *e3 = tensor(p3, t, 3, "embedding");
  for (size_t i = 0; i < fixed.size(); ++i) {
    ASSERT_EQ(e0[i], e1[i] + fixed[i]) << i;
    ASSERT_EQ(e3[i], e0[i]) << i;
  }
  EXPECT_EQ(t.replica_scenario(2).compression.boundary.method, BoundaryMethod::none);
  EXPECT_EQ(one.compression.boundary.method, BoundaryMethod::subspace);
  EXPECT_EQ(t.compressed_traffic().codec,
            "replica 0: none (uncompressed K/V); replica 1: subspace (rank 8 of 32, exact under the subspace "
            "constraint); replica 2: none (the dense residual stream)");
}

// The run's codec line names each codec once, with the replicas that use it.
TEST(SelectiveCompression, CodecLineGroupsTheReplicas) {
  Scenario s = mixed(DataSyncMethod::sparseloco);
  s.parallel.replicas[2].compress_boundaries = true;
  EXPECT_EQ(LayoutTrainer(s, ComputeTiming::profile).compressed_traffic().codec,
            "replica 0: none (uncompressed K/V); replicas 1, 2: subspace (rank 8 of 32, exact under the subspace "
            "constraint)");
}

TEST(SelectiveCompression, OuterStepKeepsTheCompressingReplicaInsideItsSubspace) {
  for (DataSyncMethod method : {DataSyncMethod::diloco, DataSyncMethod::sparseloco}) {
    const Scenario s = mixed(method);
    LayoutTrainer t(s, ComputeTiming::profile);
    const int per = s.training.batch_size / 3;
    const double rows = double(per) * double(s.model.seq_len), el = s.model.bytes_per_element;
    for (int k = 0; k < 2; ++k) {
      const TestBatch b = make_batch(s, k);
      const StepRecord rec = t.train_step(k, b.inputs.data(), b.targets.data(), s.training.batch_size);
      int acts = 0;
      for (const sim::Task& task : rec.graph.tasks()) {
        if (task.kind != sim::TaskKind::transfer || task.kind_tag != "act") continue;
        ++acts;
        if (task.rank == 1) EXPECT_DOUBLE_EQ(task.bytes, rows * (kRank + 1) * el) << "the compressing replica";
        else if (task.rank == 3) EXPECT_DOUBLE_EQ(task.bytes, rows * s.model.d_model * el) << "a dense replica";
        else ADD_FAILURE() << "act from rank " << task.rank;
      }
      EXPECT_EQ(acts, 2);
    }
    // After the outer step (step 1): an unconstrained tensor is the same on
    // every holder; the compressing replica's wo is the others' projected.
    const std::vector<float> p0 = params_of(t, 0), p1 = params_of(t, 1), p3 = params_of(t, 3);
    const int64_t dd = int64_t(s.model.d_model) * s.model.d_model;
    for (int64_t i = 0; i < dd; ++i) {
      ASSERT_EQ(tensor(p1, t, 1, "layers.0.wq")[i], tensor(p0, t, 0, "layers.0.wq")[i]) << i;
      ASSERT_EQ(tensor(p3, t, 3, "layers.1.wo")[i], tensor(p0, t, 0, "layers.1.wo")[i]) << i;
    }
    const std::vector<float> U = compress::subspace_basis(s.model.d_model, kRank, compress::boundary_seed(s));
    for (const char* name : {"layers.0.wo", "layers.1.wo"}) {
      const std::vector<double> want = projected(U, s.model.d_model, kRank, tensor(p0, t, 0, name), s.model.d_model);
      const std::vector<float> want_f(want.begin(), want.end());
      EXPECT_LT(rel_diff(tensor(p1, t, 1, name), want_f.data(), dd), 1e-5) << name;
      EXPECT_GT(rel_diff(tensor(p0, t, 0, name), want_f.data(), dd), 1e-3) << name << ": the dense replicas leave span(U)";
    }
    // The boundary of the compressing replica is rebuilt exactly with the new weights.
    const TestBatch b = make_batch(s, 2);
    const float mean = t.evaluate(b.inputs.data(), b.targets.data(), s.training.batch_size);
    const int64_t n = int64_t(s.training.batch_size) * s.model.seq_len * s.model.d_model;
    EXPECT_LT(rel_diff(t.rank(2).model().input_residual(), t.rank(1).model().output_residual(), n), 1e-6);
    // Each replica's loss: the dense ones hold one function (one rank or two
    // stages), the compressing one its projection; evaluate() is their mean.
    const std::vector<double> loss = t.last_eval_per_replica();
    ASSERT_EQ(loss.size(), 3u);
    EXPECT_NEAR(loss[2], loss[0], 1e-5 * loss[0]);
    EXPECT_NE(loss[1], loss[0]) << "the projected copy is another function";
    EXPECT_FLOAT_EQ(mean, float((loss[0] + loss[1] + loss[2]) / 3));
  }
}

std::string error_of(const Scenario& s) {
  try {
    LayoutTrainer t(s, ComputeTiming::profile);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SelectiveCompression, LayoutsItCannotTrainNameTheirKey) {
  Scenario s = mixed(DataSyncMethod::all_reduce);
  EXPECT_NE(error_of(s).find("parallel.replicas.1"), std::string::npos) << error_of(s);
  s.parallel.replicas = {ReplicaConfig{2, 1, {0, 1}, false}, ReplicaConfig{2, 1, {2, 3}, true}};
  s.parallel.placement = {0, 1, 2, 3}, s.parallel.data = 2, s.training.batch_size = 4;
  EXPECT_NE(error_of(s).find("parallel.replicas.1.compress_boundaries"), std::string::npos) << error_of(s);
  s.parallel.data_sync.method = DataSyncMethod::diloco;
  EXPECT_EQ(error_of(s), "(no error)") << "selective compression with local steps";
  s.parallel.replicas = {ReplicaConfig{1, 1, {0}, false}, ReplicaConfig{1, 2, {1, 2}, false}};
  s.parallel.placement = {0, 1, 2};
  EXPECT_NE(error_of(s).find("parallel.replicas.1.context"), std::string::npos) << error_of(s);
  s.parallel.replicas = {ReplicaConfig{1, 1, {0}, false}, ReplicaConfig{5, 1, {1, 2, 3, 4, 5}, false}};
  s.parallel.placement = {0, 1, 2, 3, 4, 5};
  EXPECT_NE(error_of(s).find("parallel.replicas.1.pipeline"), std::string::npos) << error_of(s);
}

}  // namespace
}  // namespace lowband::parallel::test
