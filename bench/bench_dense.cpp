// The memory-bound dense ops at a small model's step shapes (n = 4096 tokens,
// d = 256, head_dim 64, ffn 768, GPT-2 vocabulary), CPU, all OpenMP threads.
// They do little arithmetic per byte, so the figure of merit is bytes moved per
// second (bytes_per_second: each input read once, each output written once)
// against the machine's ~27 GB/s two-thread STREAM triad.
//   ./bench_dense --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "bench/benchmark_main.h"
#include "common/aligned_buffer.h"
#include "kernels/adamw.h"
#include "kernels/cross_entropy.h"
#include "kernels/embedding.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"

namespace {

namespace cpu = lowband::kernels::cpu;

constexpr int64_t kTokens = 4096, kDim = 256, kHeadDim = 64, kFfn = 768, kVocab = 50257;

lowband::AlignedVector<float> random_vec(size_t n, float lo = -1.0f, float hi = 1.0f, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  lowband::AlignedVector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<int32_t> random_ids(size_t n, int32_t vocab) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> dist(0, vocab - 1);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

void set_bytes(benchmark::State& state, double bytes) {
  state.SetBytesProcessed(int64_t(bytes) * state.iterations());
}

void BM_embedding_forward(benchmark::State& state) {
  const auto ids = random_ids(kTokens, kVocab);
  const auto table = random_vec(size_t(kVocab * kDim));
  lowband::AlignedVector<float> out(size_t(kTokens * kDim));
  for (auto _ : state) cpu::embedding_forward(ids.data(), kTokens, table.data(), kVocab, kDim, out.data());
  set_bytes(state, 2.0 * 4 * kTokens * kDim);
}

void BM_embedding_backward(benchmark::State& state) {
  const auto ids = random_ids(kTokens, kVocab);
  const auto dout = random_vec(size_t(kTokens * kDim));
  lowband::AlignedVector<float> dtable(size_t(kVocab * kDim), 0.0f);
  for (auto _ : state) cpu::embedding_backward(ids.data(), kTokens, dout.data(), kVocab, kDim, dtable.data());
  set_bytes(state, 3.0 * 4 * kTokens * kDim);  // read dout, read+write the touched rows
}

void BM_rmsnorm_forward(benchmark::State& state) {
  const auto x = random_vec(size_t(kTokens * kDim)), w = random_vec(static_cast<size_t>(kDim));
  lowband::AlignedVector<float> y(x.size()), rstd(static_cast<size_t>(kTokens));
  for (auto _ : state) cpu::rmsnorm_forward(x.data(), w.data(), kTokens, kDim, 1e-5f, y.data(), rstd.data());
  set_bytes(state, 2.0 * 4 * kTokens * kDim);
}

void BM_rmsnorm_backward(benchmark::State& state) {
  const auto x = random_vec(size_t(kTokens * kDim)), w = random_vec(static_cast<size_t>(kDim));
  const auto dy = random_vec(x.size(), -1, 1, 2), rstd = random_vec(size_t(kTokens), 0.5f, 2.0f);
  lowband::AlignedVector<float> dx(x.size()), dw(size_t(kDim), 0.0f);
  for (auto _ : state)
    cpu::rmsnorm_backward(dy.data(), x.data(), w.data(), rstd.data(), kTokens, kDim, dx.data(), dw.data());
  set_bytes(state, 3.0 * 4 * kTokens * kDim);
}

void BM_rope_forward(benchmark::State& state) {
  const int64_t heads = kDim / kHeadDim;
  const auto x = random_vec(size_t(kTokens * kDim));
  std::vector<int64_t> pos(static_cast<size_t>(kTokens));
  for (int64_t t = 0; t < kTokens; ++t) pos[size_t(t)] = t;
  lowband::AlignedVector<float> out(x.size());
  for (auto _ : state) cpu::rope_forward(x.data(), pos.data(), kTokens, heads, kHeadDim, out.data());
  set_bytes(state, 2.0 * 4 * kTokens * kDim);
}

void BM_swiglu_forward(benchmark::State& state) {
  const auto a = random_vec(size_t(kTokens * kFfn), -4, 4), b = random_vec(a.size(), -1, 1, 2);
  lowband::AlignedVector<float> out(a.size());
  for (auto _ : state) cpu::swiglu_forward(a.data(), b.data(), kTokens, kFfn, out.data());
  set_bytes(state, 3.0 * 4 * kTokens * kFfn);
}

void BM_swiglu_backward(benchmark::State& state) {
  const auto a = random_vec(size_t(kTokens * kFfn), -4, 4), b = random_vec(a.size(), -1, 1, 2);
  const auto dout = random_vec(a.size(), -1, 1, 3);
  lowband::AlignedVector<float> da(a.size()), db(a.size());
  for (auto _ : state) cpu::swiglu_backward(dout.data(), a.data(), b.data(), kTokens, kFfn, da.data(), db.data());
  set_bytes(state, 5.0 * 4 * kTokens * kFfn);
}

// 1024 rows of the GPT-2 vocabulary (206 MB of logits) keep the working set modest.
constexpr int64_t kCeRows = 1024;

void BM_cross_entropy_forward(benchmark::State& state) {
  const auto logits = random_vec(size_t(kCeRows * kVocab), -10, 10);
  const auto targets = random_ids(kCeRows, kVocab);
  lowband::AlignedVector<float> losses(static_cast<size_t>(kCeRows)), lse(static_cast<size_t>(kCeRows));
  for (auto _ : state)
    benchmark::DoNotOptimize(cpu::cross_entropy_forward(logits.data(), targets.data(), kCeRows,
                                                        kVocab, losses.data(), lse.data()));
  set_bytes(state, 4.0 * kCeRows * kVocab);
}

void BM_cross_entropy_backward(benchmark::State& state) {
  const auto logits = random_vec(size_t(kCeRows * kVocab), -10, 10);
  const auto targets = random_ids(kCeRows, kVocab);
  lowband::AlignedVector<float> losses(static_cast<size_t>(kCeRows)), lse(static_cast<size_t>(kCeRows)), dlogits(logits.size());
  cpu::cross_entropy_forward(logits.data(), targets.data(), kCeRows, kVocab, losses.data(), lse.data());
  for (auto _ : state)
    cpu::cross_entropy_backward(logits.data(), targets.data(), lse.data(), kCeRows, kVocab, dlogits.data());
  set_bytes(state, 2.0 * 4 * kCeRows * kVocab);
}

// 16M parameters: about the small model's size with its GPT-2 embedding.
void BM_adamw_step(benchmark::State& state) {
  const int64_t count = int64_t(1) << 24;
  auto p = random_vec(static_cast<size_t>(count)), m = random_vec(size_t(count), -0.1f, 0.1f, 2);
  auto v = random_vec(size_t(count), 0.0f, 0.01f, 3);
  const auto g = random_vec(size_t(count), -0.1f, 0.1f, 4);
  lowband::kernels::AdamWConfig config;
  int64_t step = 1;
  for (auto _ : state) cpu::adamw_step(p.data(), g.data(), m.data(), v.data(), count, step++, config);
  set_bytes(state, 7.0 * 4 * count);  // read p, g, m, v; write p, m, v
}

void BM_global_grad_norm(benchmark::State& state) {
  const int64_t count = int64_t(1) << 24;
  const auto g = random_vec(static_cast<size_t>(count));
  for (auto _ : state) benchmark::DoNotOptimize(cpu::global_grad_norm(g.data(), count));
  set_bytes(state, 4.0 * count);
}

}  // namespace

BENCHMARK(BM_embedding_forward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_embedding_backward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_rmsnorm_forward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_rmsnorm_backward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_rope_forward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_swiglu_forward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_swiglu_backward)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_cross_entropy_forward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_cross_entropy_backward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_adamw_step)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_global_grad_norm)->Unit(benchmark::kMillisecond)->UseRealTime();
LOWBAND_BENCHMARK_MAIN()
