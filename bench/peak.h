#pragma once
// Peak fp32 throughput probe: every thread runs independent chains of fused
// multiply-adds on registers only (no memory traffic), so the result is the
// core's FMA issue limit, measured rather than read from a datasheet.
// Uses AVX-512 when compiled for it, else AVX2+FMA, else scalar FMA.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

namespace lowband::bench {

namespace detail {
// 16 independent accumulators: enough to cover FMA latency (4 cycles) times
// two FMA ports with room to spare. Returns a value so the work is not elided.
inline float fma_chain(int64_t iters, float seed) {
#if defined(__AVX512F__)
  using V = __m512;
  constexpr int kLanes = 16;
  auto set1 = [](float f) { return _mm512_set1_ps(f); };
  auto fma = [](V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); };
  auto sum = [](V a) {
    alignas(64) float t[16];
    _mm512_store_ps(t, a);
    float s = 0.0f;
    for (float x : t) s += x;
    return s;
  };
#elif defined(__FMA__)
  using V = __m256;
  constexpr int kLanes = 8;
  auto set1 = [](float f) { return _mm256_set1_ps(f); };
  auto fma = [](V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); };
  auto sum = [](V a) {
    alignas(32) float t[8];
    _mm256_store_ps(t, a);
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
  };
#else
  using V = float;
  constexpr int kLanes = 1;
  auto set1 = [](float f) { return f; };
  auto fma = [](V a, V b, V c) { return a * b + c; };
  auto sum = [](V a) { return a; };
#endif
  (void)kLanes;
  V acc[16];
  for (int j = 0; j < 16; ++j) acc[j] = set1(seed + 0.001f * j);
  const V mul = set1(0.9999999f), add = set1(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) acc[j] = fma(acc[j], mul, add);
  }
  float total = 0.0f;
  for (int j = 0; j < 16; ++j) total += sum(acc[j]);
  return total;
}

inline constexpr int vector_lanes() {
#if defined(__AVX512F__)
  return 16;
#elif defined(__FMA__)
  return 8;
#else
  return 1;
#endif
}
}  // namespace detail

// One trial: `threads` OpenMP threads each run the chain `iters` times; GFLOP/s
// counts an FMA as 2 flops. 250,000 iterations take about 3 ms here.
inline double measure_fp32_gflops_once(int threads, int64_t iters) {
  const double flops_per_thread = 2.0 * 16 * detail::vector_lanes() * double(iters);
  static volatile float sink = 0.0f;
  float partial = 0.0f;
  const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : partial)
  partial += detail::fma_chain(iters, 1.0f + 0.01f * omp_get_thread_num());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  sink = sink + partial;
  return flops_per_thread * threads / seconds * 1e-9;
}

// Best of several trials. About 0.2 s in all on this machine. The best trial
// catches the highest clock of the moment (turbo); under sustained AVX-512 load
// this 2-vCPU machine runs lower (probes run between GEMM calls read ~15 % less,
// kernels/README.md), which is why bench_matmul also probes beside its calls.
inline double measure_peak_fp32_gflops(int threads) {
  double best_gflops = 0.0;
  for (int trial = 0; trial < 5; ++trial)
    best_gflops = std::max(best_gflops, measure_fp32_gflops_once(threads, 2'000'000));
  return best_gflops;
}

}  // namespace lowband::bench
