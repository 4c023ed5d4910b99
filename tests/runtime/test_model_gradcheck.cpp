// Gradient check of the whole model by central finite differences.
//
// How it is made meaningful in fp32: finite differences of the fp32 loss would
// be dominated by its rounding (loss ~2.4 · 6e-8 / h), so the differences are
// taken of the float64 reference loss (test_model_reference.h, checked equal to
// the fp32 forward in test_model.cpp) at the same parameters, with h = 1e-5:
// truncation ~h² and rounding ~1e-16/h keep them exact to ~1e-9. The analytic
// fp32 gradients must then agree to fp32 accumulation error, tensor by tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "runtime/model/model.h"
#include "tests/kernels/reference.h"
#include "tests/runtime/test_model_reference.h"

namespace lowband::model::test {
namespace {

using kernels::test::fresh_seed;
using kernels::test::rel_error;
using kernels::test::seed_note;

ModelConfig grad_config(bool tie) {
  ModelConfig c;
  c.layers = 2;
  c.d_model = 16;
  c.heads = 2;
  c.kv_heads = 1;
  c.ffn_hidden = 24;
  c.vocab = 11;
  c.seq_len = 7;
  c.tie_embeddings = tie;
  return c;
}

// As in test_model.cpp: weights large enough to exercise every non-linearity.
void randomize(Model& m, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const auto& t : m.layout().tensors()) {
    float* p = m.params() + t.offset;
    for (int64_t i = 0; i < t.count(); ++i)
      p[i] = t.role == TensorRole::norm ? 1.0f + 0.3f * u(rng) : 1.5f * u(rng) / std::sqrt(float(t.cols));
  }
}

// Central differences of the float64 reference loss for one tensor.
std::vector<double> fd_gradient(const Model& model, const RefBatch& b, const TensorInfo& t) {
  std::vector<double> p(model.params(), model.params() + model.param_count());
  std::vector<double> g(size_t(t.count()));
  const double h = 1e-5;
  for (int64_t i = 0; i < t.count(); ++i) {
    double& x = p[size_t(t.offset + i)];
    const double x0 = x;
    x = x0 + h;
    const double up = ref_loss(model, p, b);
    x = x0 - h;
    const double down = ref_loss(model, p, b);
    x = x0;
    g[size_t(i)] = (up - down) / (2 * h);
  }
  return g;
}

void check_gradients(bool tie, const std::vector<std::string>& only) {
  // Expectation: every tensor's analytic gradient equals the float64 central
  // differences with relative (2-norm) error < 5e-6 (measured: 1e-7 to 6e-7) — fp32 rounding over
  // a few hundred terms, well below any missing term or factor (>= 1e-2).
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  std::mt19937_64 rng(seed);
  Model model(grad_config(tie), 1);
  randomize(model, rng);
  RefBatch b = random_batch(rng, 2, 7, model.config().vocab, 2);
  b.targets[9] = -1;  // an ignored row contributes no gradient
  LocalAttention attention;
  const float loss = model.forward_backward(token_batch(b), attention);
  ASSERT_TRUE(std::isfinite(loss));
  for (const auto& t : model.layout().tensors()) {
    if (!only.empty() && std::find(only.begin(), only.end(), t.name) == only.end()) continue;
    const std::vector<double> fd = fd_gradient(model, b, t);
    double norm = 0;
    for (double v : fd) norm += v * v;
    ASSERT_GT(norm, 0.0) << t.name << ": a zero gradient would make the check vacuous";
    EXPECT_LT(rel_error(model.grads() + t.offset, fd.data(), fd.size()), 5e-6) << t.name;
  }
}

TEST(ModelGradient, EveryTensorMatchesFiniteDifferencesOfFloat64Loss) {
  check_gradients(false, {});
}

TEST(ModelGradient, TiedEmbeddingCollectsInputAndOutputGradients) {
  // The tied table gets both the embedding lookup's and the LM head's gradient.
  check_gradients(true, {"embedding", "final_norm", "layers.1.w_down"});
}

}  // namespace
}  // namespace lowband::model::test
