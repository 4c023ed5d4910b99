// The model on a CUDA GPU against the same model on the CPU: one set of
// weights, one batch, then a few AdamW steps each on its own device. Every
// kernel is already checked CUDA-vs-CPU on its own (tests/kernels/*cuda*); this
// checks the model's use of them: device buffers, copies, in-place reuse, the
// token/target/position uploads and the backend table. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/backend_buffer.h"
#include "kernels/device.h"
#include "runtime/model/model.h"
#include "tests/kernels/reference.h"

namespace lowband::model {
namespace {

using kernels::test::fresh_seed;
using kernels::test::rel_error;
using kernels::test::seed_note;

ModelConfig small_config(bool tie) {
  ModelConfig c;
  c.layers = 2;
  c.d_model = 64;
  c.heads = 4;
  c.kv_heads = 2;  // grouped-query attention
  c.ffn_hidden = 160;
  c.vocab = 211;
  c.seq_len = 90;  // not a multiple of the CUDA attention tile (64)
  c.tie_embeddings = tie;
  return c;
}

// Weights large enough that attention is far from uniform.
std::vector<float> random_weights(const ParamLayout& layout, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> p(size_t(layout.count()));
  for (const auto& t : layout.tensors())
    for (int64_t i = 0; i < t.count(); ++i)
      p[size_t(t.offset + i)] = t.role == TensorRole::norm
                                    ? 1.0f + 0.3f * u(rng)
                                    : 1.5f * u(rng) / std::sqrt(float(t.cols));
  return p;
}

TEST(ModelCudaVsCpu, TrainingStepsAgree) {
  std::string why;
  if (!kernels::cuda_available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  std::mt19937_64 rng(seed);
  for (bool tie : {false, true}) {
    SCOPED_TRACE(tie ? "tied embeddings" : "separate lm_head");
    const ModelConfig c = small_config(tie);
    // Two sequences at global positions 5.. and 300.., one target ignored.
    const int64_t sequences = 2, T = c.seq_len, n = sequences * T;
    std::uniform_int_distribution<int32_t> token(0, int32_t(c.vocab) - 1);
    std::vector<int32_t> inputs(static_cast<size_t>(n)), targets(static_cast<size_t>(n));
    std::vector<int64_t> positions(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      inputs[size_t(i)] = token(rng);
      targets[size_t(i)] = token(rng);
      positions[size_t(i)] = (i < T ? 5 : 300) + i % T;
    }
    targets[17] = -1;
    TokenBatch batch{inputs.data(), targets.data(), positions.data(), sequences, T};

    Model cpu(c, 1), gpu(c, 1, {1e-5f, 10000.0f, kernels::Device::cuda});
    const std::vector<float> w = random_weights(cpu.layout(), rng);
    const size_t count = w.size(), bytes = count * sizeof(float);
    std::copy(w.begin(), w.end(), cpu.params());
    gpu.backend().upload(gpu.params(), w.data(), bytes);
    LocalAttention cpu_att, gpu_att(kernels::Device::cuda);

    const auto& kc = cpu.backend();
    const auto& kg = gpu.backend();
    kernels::BackendBuffer<float> mc(kc, count), vc(kc, count), mg(kg, count), vg(kg, count);
    kernels::AdamWConfig adam;
    adam.lr = 1e-3f;
    adam.weight_decay = 0.1f;
    for (int step = 1; step <= 4; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      const float loss_c = cpu.forward_backward(batch, cpu_att);
      const float loss_g = gpu.forward_backward(batch, gpu_att);
      EXPECT_NEAR(loss_g, loss_c, 1e-5 * std::fabs(loss_c));
      const std::vector<float> gc = cpu.grads_to_host(), gg = gpu.grads_to_host();
      for (const auto& t : cpu.layout().tensors()) {
        const double err = rel_error(gg.data() + t.offset, gc.data() + t.offset, size_t(t.count()));
        EXPECT_LT(err, 1e-4) << t.name;
      }
      const double norm_c = kc.clip_grad_norm(cpu.grads(), int64_t(count), 1.0);
      const double norm_g = kg.clip_grad_norm(gpu.grads(), int64_t(count), 1.0);
      EXPECT_NEAR(norm_g, norm_c, 1e-5 * norm_c);
      kc.adamw_step(cpu.params(), cpu.grads(), mc.data(), vc.data(), int64_t(count), step, adam);
      kg.adamw_step(gpu.params(), gpu.grads(), mg.data(), vg.data(), int64_t(count), step, adam);
    }
    // The weights moved the same way. (Not element for element to 1e-5: where a
    // gradient is ~0, rounding can flip the sign of an Adam step of size lr.)
    const std::vector<float> pc = cpu.params_to_host(), pg = gpu.params_to_host();
    std::vector<double> moved_c(count), moved_g(count);
    for (size_t i = 0; i < count; ++i) {
      moved_c[i] = double(pc[i]) - w[i];
      moved_g[i] = double(pg[i]) - w[i];
    }
    EXPECT_LT(rel_error(moved_g, moved_c), 1e-2);
  }
}

TEST(ModelCudaVsCpu, BadTokenIsAnInputErrorBeforeAnyKernelRuns) {
  ModelConfig c = small_config(false);
  Model m(c, 1);  // the check is in Model::begin, the same on every device
  std::vector<int32_t> inputs(8, 3), targets(8, 1);
  inputs[5] = int32_t(c.vocab);
  TokenBatch batch{inputs.data(), targets.data(), nullptr, 1, 8};
  LocalAttention att;
  try {
    m.forward(batch, att);
    FAIL() << "no error for a token id >= vocab";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("batch.inputs[5]"), std::string::npos) << e.what();
  }
  inputs[5] = 3;
  targets[2] = int32_t(c.vocab);
  EXPECT_THROW(m.forward(batch, att), InputError);
}

}  // namespace
}  // namespace lowband::model
