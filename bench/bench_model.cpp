// One training step of the Llama-style model on the CPU: 4 layers, d_model 256,
// 4 heads (no GQA), ffn 688, byte vocabulary (256), one sequence of 2048 tokens,
// on 2 OpenMP threads (the PyTorch comparison point). Reports the
// forward, forward+backward and the whole step (forward, backward, clipping,
// AdamW), with tokens/s and GFLOP/s of model FLOPs (matmuls 2·n·params forward,
// 3x that for the step; attention counted by the kernels' unmasked-pair rule).
//   ./bench_model --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// With --dump=DIR it instead writes the initial weights, the batch, the loss, the
// gradients and the weights after one AdamW step to DIR (meta.json + raw
// little-endian .f32/.i32 files), for tools/compare_pytorch.py to check against
// PyTorch.
// Where a CUDA device is present it also runs the whole step on the GPU
// (model_train_step_cuda/sequences:N: forward, backward, clipping and AdamW on
// the device, synchronised each step) for 1 and 8 sequences of 2048 tokens.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/attention.h"
#include "kernels/backend_buffer.h"
#include "kernels/device.h"
#include "kernels/omp_wait_policy.h"
#include "runtime/model/model.h"
#include "runtime/optim/optimizer.h"

namespace {

using namespace lowband;

constexpr int kThreads = 2;

ModelConfig bench_config() {
  ModelConfig c;
  c.layers = 4;
  c.d_model = 256;
  c.heads = 4;
  c.kv_heads = 4;
  c.ffn_hidden = 688;
  c.vocab = 256;
  c.seq_len = 2048;
  return c;
}

struct Setup {
  ModelConfig config = bench_config();
  int64_t sequences = 1;
  std::vector<int32_t> inputs, targets;
  model::TokenBatch batch;
  explicit Setup(int64_t sequences_ = 1) : sequences(sequences_) {
    std::mt19937 rng(1);
    std::uniform_int_distribution<int32_t> id(0, config.vocab - 1);
    for (int64_t t = 0; t < sequences * config.seq_len; ++t) inputs.push_back(id(rng));
    targets.assign(inputs.begin() + 1, inputs.end());
    targets.push_back(id(rng));
    batch.inputs = inputs.data();
    batch.targets = targets.data();
    batch.sequences = sequences;
    batch.tokens = config.seq_len;
  }
  // Forward FLOPs: every matmul (all weights but the embedding and norms, the
  // lm_head included) and the causal attention.
  double forward_flops() const {
    const double n = double(config.seq_len), d = config.d_model;
    const double layer_matmul = d * (d + 2.0 * config.d_kv()) + d * d + 3.0 * d * config.ffn_hidden;
    kernels::AttentionShape s;
    s.nq = s.nk = config.seq_len;
    s.heads = config.heads;
    s.kv_heads = config.kv_heads;
    s.head_dim = config.head_dim();
    return double(sequences) * (2.0 * n * (config.layers * layer_matmul + d * config.vocab) +
                                config.layers * kernels::attention_forward_flops(s));
  }
  double step_flops() const {
    kernels::AttentionShape s;
    s.nq = s.nk = config.seq_len;
    s.heads = config.heads;
    s.kv_heads = config.kv_heads;
    s.head_dim = config.head_dim();
    const double att_fwd = double(sequences) * config.layers * kernels::attention_forward_flops(s);
    const double att_bwd = double(sequences) * config.layers * kernels::attention_backward_flops(s);
    return 3.0 * (forward_flops() - att_fwd) + att_fwd + att_bwd;
  }
};

void set_counters(benchmark::State& state, const Setup& s, double flops) {
  state.counters["tokens_per_s"] = benchmark::Counter(double(s.sequences * s.config.seq_len),
                                                      benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP_per_s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_model_forward(benchmark::State& state) {
  omp_set_num_threads(kThreads);
  Setup s;
  model::Model m(s.config, 1);
  model::LocalAttention attention;
  for (auto _ : state) benchmark::DoNotOptimize(m.forward(s.batch, attention));
  set_counters(state, s, s.forward_flops());
}

void BM_model_forward_backward(benchmark::State& state) {
  omp_set_num_threads(kThreads);
  Setup s;
  model::Model m(s.config, 1);
  model::LocalAttention attention;
  for (auto _ : state) benchmark::DoNotOptimize(m.forward_backward(s.batch, attention));
  set_counters(state, s, s.step_flops());
}

void BM_model_train_step(benchmark::State& state) {
  omp_set_num_threads(kThreads);
  Setup s;
  model::Model m(s.config, 1);
  model::LocalAttention attention;
  optim::OptimizerConfig oc;
  oc.weight_decay = 0.01f;
  optim::AdamW opt(m.layout(), oc);
  for (auto _ : state) {
    benchmark::DoNotOptimize(m.forward_backward(s.batch, attention));
    opt.step(m.params(), m.grads(), 3e-4);
  }
  set_counters(state, s, s.step_flops());
}

// The whole step on the GPU, the optimiser included (kernels::cuda::adamw_step on
// device moments; same lr, clipping at 1.0 as the CPU step's defaults).
void BM_model_train_step_cuda(benchmark::State& state) {
  Setup s(state.range(0));
  model::ModelOptions options;
  options.device = kernels::Device::cuda;
  model::Model m(s.config, 1, options);
  model::LocalAttention attention(kernels::Device::cuda);
  const kernels::Backend& k = m.backend();
  const size_t count = size_t(m.param_count());
  kernels::BackendBuffer<float> moment1(k, count), moment2(k, count);
  kernels::AdamWConfig adam;
  int64_t step = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(m.forward_backward(s.batch, attention));
    k.clip_grad_norm(m.grads(), int64_t(count), 1.0);
    k.adamw_step(m.params(), m.grads(), moment1.data(), moment2.data(), int64_t(count), ++step, adam);
    kernels::cuda::synchronize();
  }
  set_counters(state, s, s.step_flops());
}

BENCHMARK(BM_model_forward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_model_forward_backward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_model_train_step)->Unit(benchmark::kMillisecond)->UseRealTime();

template <typename T>
void write_raw(const std::string& path, const T* data, size_t count) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(count * sizeof(T)));
  if (!out) throw InputError("--dump", "cannot write " + path);
}

// One forward+backward and one optimiser step of the benchmark's model, written
// out for tools/compare_pytorch.py.
void dump(const std::string& dir) {
  omp_set_num_threads(kThreads);
  Setup s;
  model::Model m(s.config, 1);
  model::LocalAttention attention;
  optim::OptimizerConfig oc;
  oc.weight_decay = 0.1f;  // large enough that a wrong decay mask shows
  oc.grad_clip = 1.0;
  const double lr = 1e-3;
  const size_t n = size_t(m.param_count());
  write_raw(dir + "/params0.f32", m.params(), n);
  write_raw(dir + "/inputs.i32", s.inputs.data(), s.inputs.size());
  write_raw(dir + "/targets.i32", s.targets.data(), s.targets.size());
  const float loss = m.forward_backward(s.batch, attention);
  write_raw(dir + "/grads.f32", m.grads(), n);
  optim::AdamW opt(m.layout(), oc);
  const optim::StepStats st = opt.step(m.params(), m.grads(), lr);
  write_raw(dir + "/params1.f32", m.params(), n);

  nlohmann::json meta;
  const ModelConfig& c = s.config;
  meta["config"] = {{"layers", c.layers},     {"d_model", c.d_model}, {"heads", c.heads},
                    {"kv_heads", c.kv_heads}, {"ffn_hidden", c.ffn_hidden}, {"vocab", c.vocab},
                    {"seq_len", c.seq_len},   {"tie_embeddings", c.tie_embeddings}};
  meta["norm_eps"] = m.options().norm_eps;
  meta["rope_theta"] = m.options().rope_theta;
  meta["optimizer"] = {{"lr", lr},          {"beta1", oc.beta1}, {"beta2", oc.beta2}, {"eps", oc.eps},
                       {"weight_decay", oc.weight_decay}, {"grad_clip", oc.grad_clip}};
  meta["loss"] = loss;
  meta["grad_norm"] = st.grad_norm;
  meta["threads"] = kThreads;
  for (const auto& t : m.layout().tensors())
    meta["tensors"].push_back({{"name", t.name}, {"offset", t.offset}, {"rows", t.rows},
                               {"cols", t.cols}, {"decays", t.decays()}});
  std::ofstream(dir + "/meta.json") << meta.dump(1) << "\n";
  std::printf("wrote %s: loss %.6f, grad norm %.6f\n", dir.c_str(), loss, st.grad_norm);
}

}  // namespace

int main(int argc, char** argv) {
  lowband::kernels::limit_omp_spinning_by_default(argv);  // kernels/omp_wait_policy.h
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--dump=", 0) == 0) {
      try {
        dump(arg.substr(7));
        return 0;
      } catch (const std::exception& e) {
        std::cerr << "bench_model: " << e.what() << "\n";
        return 2;
      }
    }
  }
  std::string why;
  if (lowband::kernels::cuda_available(&why)) {
    for (int64_t sequences : {1, 8})
      benchmark::RegisterBenchmark("model_train_step_cuda", BM_model_train_step_cuda)
          ->Arg(sequences)
          ->ArgName("sequences")
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  } else {
    benchmark::AddCustomContext("cuda", "skipped: " + why);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
