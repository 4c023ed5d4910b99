#pragma once
// Fixtures of the pipeline trainer tests: a tiny scenario, a batch with ignored
// targets, and the single-device reference (under the subspace constraint when
// the scenario's boundaries are subspace).
#include <memory>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/backend.h"
#include "runtime/model/model.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/load.h"
#include "tests/runtime/test_numeric_support.h"

namespace lowband::parallel::test::pipeline_support {

// grad_clip 0: the gradients a step leaves behind are the raw ones.
inline Scenario tiny_pipeline(int P, int microbatches, PipelineSchedule schedule, std::vector<int> stage_layers = {}) {
  Scenario s = builtin_scenario("default", {"model.layers=4", "model.d_model=32", "model.heads=4", "model.kv_heads=2",
                                            "model.ffn_hidden=64", "model.seq_len=32", "model.tie_embeddings=false",
                                            "network.nodes=8", "training.batch_size=4", "training.lr=0.01",
                                            "training.lr_warmup_steps=0", "training.steps=4",
                                            "training.grad_clip=0", "parallel.context=1"});
  s.parallel.pipeline = P;
  s.parallel.microbatches = microbatches;
  s.parallel.schedule = schedule;
  s.parallel.stage_layers = std::move(stage_layers);
  return s;
}

inline Scenario with_boundary(Scenario s, BoundaryMethod method, int rank) {
  s.compression.boundary.method = method;
  s.compression.boundary.rank = rank;
  return s;
}

// Three replicas of tiny_pipeline's model: 0 one rank, the whole model; 1 two
// stages that compress their boundaries (`boundary`, rank `rank`); 2 two stages,
// dense. `method` syncs them every 2 steps (outer lr 1, no momentum).
inline Scenario mixed_replicas(BoundaryMethod boundary, int rank, DataSyncMethod method) {
  Scenario s = with_boundary(tiny_pipeline(1, 1, PipelineSchedule::one_f_one_b), boundary, rank);
  s.training.grad_clip = 1.0;
  s.parallel.replicas = {ReplicaConfig{1, 1, {0}, false}, ReplicaConfig{2, 1, {1, 2}, true},
                         ReplicaConfig{2, 1, {3, 4}, false}};
  s.parallel.placement = {0, 1, 2, 3, 4};
  s.parallel.data = 3;
  s.training.batch_size = 6;
  s.parallel.data_sync.method = method;
  s.parallel.data_sync.inner_steps = 2;
  s.parallel.data_sync.outer_lr = 1.0;
  s.parallel.data_sync.outer_momentum = 0;
  s.parallel.data_sync.topk_per_chunk = 16;
  return s;
}

struct TestBatch {
  std::vector<int32_t> inputs, targets;
};
inline TestBatch make_batch(const Scenario& s, int k) {
  TestBatch b;
  const int64_t n = s.training.batch_size * s.model.seq_len;
  uint64_t x = 4242 + 131 * uint64_t(k);
  for (int64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    b.inputs.push_back(int32_t((x >> 33) % uint64_t(s.model.vocab)));
  }
  // Every 5th target ignored: microbatches hold different numbers of valid targets.
  for (int64_t i = 0; i < n; ++i) b.targets.push_back(i % 5 == 2 ? -1 : b.inputs[size_t((i + 1) % n)]);
  return b;
}

// The single-device model of the scenario (under the subspace constraint when its
// boundaries are subspace): loss and gradients of one batch.
struct Reference {
  std::unique_ptr<model::Model> model;
  float loss = 0;
};
inline Reference reference(const Scenario& s, const TestBatch& b) {
  std::vector<float> fixed;
  model::ModelOptions o = stage_model_options(s, 0, kernels::Device::cpu, fixed);
  o.span = {};  // the whole model, E_fixed as stage 0 has it
  Reference r;
  r.model = std::make_unique<model::Model>(s.model, s.training.seed, o);
  BoundaryConstraint constraint(s, kernels::backend(kernels::Device::cpu));
  constraint.project(*r.model, false);
  model::LocalAttention attention;
  r.loss = r.model->forward_backward({b.inputs.data(), b.targets.data(), nullptr, s.training.batch_size, s.model.seq_len},
                                     attention);
  constraint.project(*r.model, true);
  return r;
}

// Every rank's gradients (with context ranks: after the step's context
// all-reduce, the whole stage's) against the reference's tensors of the same names.
inline void expect_gradients_match(LayoutTrainer& t, const Reference& ref, double tol) {
  for (int r = 0; r < t.ranks(); ++r) {
    model::Model& m = t.rank(r).model();
    for (const model::TensorInfo& ti : m.layout().tensors()) {
      const model::TensorInfo& rt = ref.model->layout().find(ti.name);
      EXPECT_LT(test_support::rel_diff(m.grads() + ti.offset, ref.model->grads() + rt.offset, ti.count()), tol)
          << "rank " << r << " " << ti.name;
    }
  }
}

// The losses of steps [from, to) on batches from .. to - 1 (no graphs).
inline std::vector<double> step_losses(Trainer& t, const Scenario& s, int from, int to) {
  std::vector<double> losses;
  for (int k = from; k < to; ++k) {
    const TestBatch b = make_batch(s, k);
    losses.push_back(t.train_step(k, b.inputs.data(), b.targets.data(), s.training.batch_size, false).loss);
  }
  return losses;
}

// A trainer checkpointed after `cut` steps and restored into a fresh one trains
// steps cut .. to - 1 bit for bit as one that never stopped: the same losses, and
// at the end the same state (parameters, optimiser, codecs, outer syncs).
template <class T>
void expect_resumes_bit_identically(const Scenario& s, int cut, int to) {
  T straight(s, ComputeTiming::profile);
  const std::vector<double> all = step_losses(straight, s, 0, to);
  T first(s, ComputeTiming::profile);
  step_losses(first, s, 0, cut);
  std::stringstream state;
  first.save_state(state);
  T resumed(s, ComputeTiming::profile);
  resumed.load_state(state);
  const std::vector<double> rest = step_losses(resumed, s, cut, to);
  for (int k = cut; k < to; ++k) EXPECT_EQ(rest[size_t(k - cut)], all[size_t(k)]) << "step " << k;
  std::stringstream end_straight, end_resumed;
  straight.save_state(end_straight);
  resumed.save_state(end_resumed);
  EXPECT_TRUE(end_straight.str() == end_resumed.str()) << "the states after step " << to - 1 << " differ";
}

}  // namespace lowband::parallel::test::pipeline_support
