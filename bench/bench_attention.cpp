// Causal attention on the CPU at T = 4096: forward, and forward + backward
// (forward, delta, backward, with zeroed gradients), head_dim 64 with 8 heads
// and head_dim 128 with 4 heads (d_model 512 either way, kv_heads = heads).
//
// FLOP convention (flash-attention's): only unmasked causal (query, key) pairs
// count; forward 4 · pairs · head_dim per head (QKᵀ and PV), backward 2.5x the
// forward (five products), so forward + backward = 3.5x forward. Counters:
// GFLOP/s and pct_peak, the percentage of the fp32 peak probed at start-up on
// the same number of threads (bench/peak.h). Where a GPU is present the same
// cases run through cuda:: on device buffers, against the GPU's probed peak
// (cuda::measure_peak_fp32_gflops); the CUDA attention is the plain reference
// kernel (kernels/cuda/attention.cu), so expect a low percentage there.
//   build-*/bench_attention --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/peak.h"
#include "common/aligned_buffer.h"
#include "kernels/attention.h"
#include "kernels/backend.h"
#include "kernels/device.h"
#include "kernels/omp_wait_policy.h"

namespace {

using lowband::kernels::AttentionShape;
namespace cpu = lowband::kernels::cpu;
namespace cuda = lowband::kernels::cuda;
// The GPU's kernels through the backend table, so this file links without CUDA too.
const lowband::kernels::Backend& gpu() { return lowband::kernels::backend(lowband::kernels::Device::cuda); }

struct Inputs {
  AttentionShape s;
  lowband::AlignedVector<float> q, k, v, out, lse, dout, delta, dq, dk, dv;  // as the model's buffers
};

Inputs make_inputs(int64_t T, int64_t heads, int64_t head_dim) {
  Inputs in;
  in.s = AttentionShape{
      T, T, heads, heads, head_dim, 0, 0, true, float(1.0 / std::sqrt(double(head_dim)))};
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto fill = [&](lowband::AlignedVector<float>& x, size_t n) {
    x.resize(n);
    for (auto& e : x) e = dist(rng);
  };
  const size_t rows = size_t(T * heads * head_dim);
  fill(in.q, rows);
  fill(in.k, rows);
  fill(in.v, rows);
  fill(in.dout, rows);
  in.out.resize(rows);
  in.dq.resize(rows);
  in.dk.resize(rows);
  in.dv.resize(rows);
  in.lse.resize(size_t(heads * T));
  in.delta.resize(size_t(heads * T));
  return in;
}

void set_counters(benchmark::State& state, double flops_per_iter, double peak_gflops) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_per_iter * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  // pct_peak = 100 * GFLOP/s / peak, as a rate so Google Benchmark divides by time.
  state.counters["pct_peak"] = benchmark::Counter(100.0 * flops_per_iter * 1e-9 / peak_gflops,
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

void bm_forward(benchmark::State& state, int64_t T, int64_t heads, int64_t hd, double peak) {
  Inputs in = make_inputs(T, heads, hd);
  for (auto _ : state) {
    cpu::attention_forward(in.s, in.q.data(), in.k.data(), in.v.data(), in.out.data(),
                           in.lse.data());
    benchmark::DoNotOptimize(in.out.data());
  }
  set_counters(state, lowband::kernels::attention_forward_flops(in.s), peak);
}

void bm_forward_backward(benchmark::State& state, int64_t T, int64_t heads, int64_t hd,
                         double peak) {
  Inputs in = make_inputs(T, heads, hd);
  for (auto _ : state) {
    cpu::attention_forward(in.s, in.q.data(), in.k.data(), in.v.data(), in.out.data(),
                           in.lse.data());
    cpu::attention_backward_delta(T, heads, hd, in.out.data(), in.dout.data(), in.delta.data());
    std::fill(in.dq.begin(), in.dq.end(), 0.0f);
    std::fill(in.dk.begin(), in.dk.end(), 0.0f);
    std::fill(in.dv.begin(), in.dv.end(), 0.0f);
    cpu::attention_backward(in.s, in.q.data(), in.k.data(), in.v.data(), in.lse.data(),
                            in.delta.data(), in.dout.data(), in.dq.data(), in.dk.data(),
                            in.dv.data());
    benchmark::DoNotOptimize(in.dq.data());
  }
  set_counters(state,
               lowband::kernels::attention_forward_flops(in.s) +
                   lowband::kernels::attention_backward_flops(in.s),
               peak);
}

void bm_backward(benchmark::State& state, int64_t T, int64_t heads, int64_t hd, double peak) {
  Inputs in = make_inputs(T, heads, hd);
  cpu::attention_forward(in.s, in.q.data(), in.k.data(), in.v.data(), in.out.data(), in.lse.data());
  cpu::attention_backward_delta(T, heads, hd, in.out.data(), in.dout.data(), in.delta.data());
  for (auto _ : state) {
    cpu::attention_backward(in.s, in.q.data(), in.k.data(), in.v.data(), in.lse.data(),
                            in.delta.data(), in.dout.data(), in.dq.data(), in.dk.data(),
                            in.dv.data());
    benchmark::DoNotOptimize(in.dq.data());
  }
  set_counters(state, lowband::kernels::attention_backward_flops(in.s), peak);
}

// Device copies of the inputs and outputs of one case.
struct DeviceInputs {
  explicit DeviceInputs(const Inputs& in) {
    for (auto [dst, src] : {std::pair{&q, &in.q},
                            {&k, &in.k},
                            {&v, &in.v},
                            {&dout, &in.dout},
                            {&out, &in.out},
                            {&dq, &in.dq},
                            {&dk, &in.dk},
                            {&dv, &in.dv},
                            {&lse, &in.lse},
                            {&delta, &in.delta}}) {
      *dst = static_cast<float*>(gpu().alloc(src->size() * sizeof(float)));
      gpu().upload(*dst, src->data(), src->size() * sizeof(float));
    }
  }
  ~DeviceInputs() {
    for (float* p : {q, k, v, dout, out, dq, dk, dv, lse, delta}) gpu().release(p);
  }
  float *q = nullptr, *k = nullptr, *v = nullptr, *dout = nullptr, *out = nullptr, *dq = nullptr,
        *dk = nullptr, *dv = nullptr, *lse = nullptr, *delta = nullptr;
};

void bm_cuda(benchmark::State& state, int64_t T, int64_t heads, int64_t hd, double peak,
             bool with_backward) {
  Inputs in = make_inputs(T, heads, hd);
  DeviceInputs d(in);
  for (auto _ : state) {
    gpu().attention_forward(in.s, d.q, d.k, d.v, d.out, d.lse);
    if (with_backward) {
      gpu().attention_backward_delta(T, heads, hd, d.out, d.dout, d.delta);
      gpu().attention_backward(in.s, d.q, d.k, d.v, d.lse, d.delta, d.dout, d.dq, d.dk, d.dv);
    }
    gpu().synchronize();
  }
  double flops = lowband::kernels::attention_forward_flops(in.s);
  if (with_backward) flops += lowband::kernels::attention_backward_flops(in.s);
  set_counters(state, flops, peak);
}

}  // namespace

int main(int argc, char** argv) {
  lowband::kernels::limit_omp_spinning_by_default(argv);  // kernels/omp_wait_policy.h
  benchmark::Initialize(&argc, argv);
  const int threads = omp_get_max_threads();
  const double peak = lowband::bench::measure_peak_fp32_gflops(threads);
  std::printf("fp32 peak probe: %.1f GFLOP/s on %d threads\n", peak, threads);
  const int64_t T = 4096;
  for (auto [heads, hd] : {std::pair<int64_t, int64_t>{8, 64}, {4, 128}}) {
    const std::string tag =
        "/T:4096/heads:" + std::to_string(heads) + "/head_dim:" + std::to_string(hd);
    benchmark::RegisterBenchmark(("attention_forward_causal" + tag).c_str(), bm_forward, T, heads,
                                 hd, peak)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("attention_backward_causal" + tag).c_str(), bm_backward, T, heads,
                                 hd, peak)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("attention_fwd_bwd_causal" + tag).c_str(), bm_forward_backward, T,
                                 heads, hd, peak)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  std::string why;
  if (lowband::kernels::cuda_available(&why)) {
    const double gpu_peak = cuda::measure_peak_fp32_gflops();
    std::printf("GPU fp32 peak probe: %.1f GFLOP/s\n", gpu_peak);
    for (auto [heads, hd] : {std::pair<int64_t, int64_t>{8, 64}, {4, 128}}) {
      const std::string tag =
          "/T:4096/heads:" + std::to_string(heads) + "/head_dim:" + std::to_string(hd);
      for (bool bwd : {false, true})
        benchmark::RegisterBenchmark(
            ((bwd ? "cuda_attention_fwd_bwd_causal" : "cuda_attention_forward_causal") + tag)
                .c_str(),
            bm_cuda, T, heads, hd, gpu_peak, bwd)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    }
  } else {
    std::printf("no CUDA benchmarks: %s\n", why.c_str());
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
