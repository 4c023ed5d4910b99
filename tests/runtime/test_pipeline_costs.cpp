// PipelineCosts: the stages of a pipeline together cost what the whole model
// costs (ContextCosts on one rank), split by layers, embedding and head.
#include <gtest/gtest.h>

#include "common/error.h"
#include "runtime/cost_model.h"
#include "runtime/parallel/context/costs.h"
#include "runtime/parallel/pipeline/costs.h"
#include "test_estimate_support.h"

namespace lowband {
namespace {

using parallel::PipelineCosts;

std::string place_of(const Scenario& s) {
  try {
    PipelineCosts costs(s);
  } catch (const InputError& e) {
    return e.place();
  }
  return "(no error)";
}

TEST(PipelineCosts, StagesTogetherCostTheWholeModel) {
  // M microbatches through every stage = the whole batch through the model, which
  // is what context parallelism on one rank computes (float64 sums, exact pieces):
  // the same FLOPs; the same memory traffic with one microbatch, more with several
  // (every microbatch reads the weights again).
  Scenario whole = testing::small_pp_scenario(1, 1);
  const parallel::ContextCosts one(whole);
  const double L = whole.model.layers;
  const cost::Cost model = one.embed(0) + (one.pre_attention(0) + one.attention(0, 0, false) + one.post_attention(0)) * L +
                           one.head(0);
  const cost::Cost model_bwd =
      cost::dense_backward(one.embed(0) + (one.pre_attention(0) + one.post_attention(0)) * L + one.head(0)) +
      one.attention(0, 0, true) * L;
  for (int P : {1, 2, 4})
    for (int M : {1, 2, 4}) {
      if (P == 1 && M > 1) continue;  // one stage of one rank: nothing to split microbatches over (refused)
      const Scenario s = testing::small_pp_scenario(P, M);  // the costs keep a reference to it
      const PipelineCosts c(s);
      EXPECT_EQ(c.microbatch_rows(), 4 / M * 4096);
      double fwd_flops = 0, fwd_bytes = 0, bwd_flops = 0, bwd_bytes = 0, params = 0;
      for (int s = 0; s < P; ++s) {
        fwd_flops += M * c.forward(s).flops, fwd_bytes += M * c.forward(s).bytes;
        bwd_flops += M * c.backward(s).flops, bwd_bytes += M * c.backward(s).bytes;
        params += c.parameters(s);
      }
      EXPECT_NEAR(fwd_flops, model.flops, 1e-12 * model.flops) << P << " " << M;
      if (M == 1) {
        EXPECT_NEAR(fwd_bytes, model.bytes, 1e-12 * model.bytes) << P;
        EXPECT_NEAR(bwd_bytes, model_bwd.bytes, 1e-12 * model_bwd.bytes) << P;
      } else {
        EXPECT_GT(fwd_bytes, model.bytes) << P << " " << M;
        EXPECT_GT(bwd_bytes, model_bwd.bytes) << P << " " << M;
      }
      EXPECT_NEAR(bwd_flops, model_bwd.flops, 1e-12 * model_bwd.flops) << P << " " << M;
      EXPECT_DOUBLE_EQ(params, whole.model.parameters());
    }
}

TEST(PipelineCosts, EndsCarryEmbeddingAndHead) {
  const Scenario s = testing::small_pp_scenario(4, 2);
  const PipelineCosts c(s);
  const auto& m = s.model;
  const double layer = cost::layer_parameters(m);
  EXPECT_DOUBLE_EQ(c.parameters(0), layer + cost::embedding_parameters(m));
  EXPECT_DOUBLE_EQ(c.parameters(1), layer);
  EXPECT_DOUBLE_EQ(c.parameters(3), layer + cost::head_parameters(m));
  EXPECT_DOUBLE_EQ(c.optimizer(2).bytes, cost::adamw_step(layer).bytes);
  // The middle stages are equal; the head (vocab 1000 > d 256) makes the last dearer.
  EXPECT_DOUBLE_EQ(c.forward(1).flops, c.forward(2).flops);
  EXPECT_GT(c.forward(3).flops, c.forward(1).flops);
  // Attention over whole sequences: 2 sequences of 4096, causal pairs T(T+1)/2 each.
  const double n = 2 * 4096.0, pairs = 2 * 4096.0 * 4097 / 2;
  const cost::Cost attn = cost::attention_forward(m, pairs, n, n, 2);
  const cost::Cost dense = cost::pre_attention_forward(m, n, 2) + cost::post_attention_forward(m, n, 2);
  EXPECT_DOUBLE_EQ(c.forward(1).flops, attn.flops + dense.flops);
  EXPECT_DOUBLE_EQ(c.backward(1).flops, cost::attention_backward(m, pairs, n, n, 2).flops + 2 * dense.flops);
}

TEST(PipelineCosts, UnevenStageLayersFollowTheScenario) {
  Scenario s = testing::small_pp_scenario(2, 1);
  s.parallel.stage_layers = {3, 1};
  const PipelineCosts c(s);
  EXPECT_EQ(c.layers(0), 3);
  EXPECT_EQ(c.layers(1), 1);
  const double layer = cost::layer_parameters(s.model);
  EXPECT_DOUBLE_EQ(c.parameters(0), 3 * layer + cost::embedding_parameters(s.model));
}

TEST(PipelineCosts, SecondsOnTheStagesNode) {
  Scenario s = testing::small_pp_scenario(2, 1);
  s.devices.node_profiles = {{1, testing::instant_device()}};
  const PipelineCosts c(s);
  const double a100 = cost::seconds(testing::builtin_device("A100-80GB"), c.forward(0), sim::DType::bf16);
  EXPECT_DOUBLE_EQ(c.seconds(0, c.forward(0), "stage_fwd"), a100);
  EXPECT_LT(c.seconds(1, c.forward(1), "stage_fwd"), 1e-15);
}

TEST(PipelineCosts, BadScenariosNameTheirKey) {
  Scenario s = testing::small_pp_scenario(2, 3);  // 3 microbatches of 4 sequences
  EXPECT_EQ(place_of(s), "parallel.microbatches");
  s = testing::small_pp_scenario(3, 1);  // 4 layers on 3 even stages
  EXPECT_EQ(place_of(s), "parallel.pipeline");
  s = testing::small_pp_scenario(2, 1);
  s.parallel.stage_layers = {2, 1};
  EXPECT_EQ(place_of(s), "parallel.stage_layers");
  s.parallel.stage_layers = {};
  s.model.tie_embeddings = true;
  EXPECT_EQ(place_of(s), "model.tie_embeddings");
  s.model.tie_embeddings = false;
  s.devices.default_profile.efficiency = 0;
  const PipelineCosts zero(s);
  EXPECT_THROW(zero.seconds(0, zero.forward(0), "stage_fwd"), InputError);
}

}  // namespace
}  // namespace lowband
