#pragma once
// Peak fp32 throughput probe: every thread runs independent chains of fused
// multiply-adds on registers only (no memory traffic), so the result is the
// core's FMA issue limit, measured rather than read from a datasheet.
// Uses AVX-512 when compiled for it, else AVX2+FMA, else 4-wide SSE/NEON: the
// translation unit's ISA (-march=native by default), not detected at run time.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

namespace lowband::bench {

namespace detail {
// kAccumulators independent chains must cover FMA latency × FMA pipes (4–5
// cycles × 2 on current x86: 8–10 in flight) AND fit in the vector registers
// with the two constants: a spilled chain round-trips through the stack every
// iteration, which the store-to-load latency stretches (issue 10: 16 chains +
// 2 constants on AVX2's 16 ymm spilled 3 chains; the probe read ~0.6 of the
// true peak, below oneDNN's sgemm). AVX-512 has 32 zmm: 24 + 2 leave spares.
// AVX2 and SSE have 16 ymm/xmm: 12 + 2.
#if defined(__AVX512F__)
using V = __m512;
constexpr int kLanes = 16, kAccumulators = 24, kRegisters = 32;
inline V broadcast(float f) { return _mm512_set1_ps(f); }
inline V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline float hsum(V a) {  // not _mm512_reduce_add_ps: GCC 12 warns inside it
  alignas(64) float t[16];
  _mm512_store_ps(t, a);
  float s = 0.0f;
  for (float x : t) s += x;
  return s;
}
#elif defined(__FMA__)
using V = __m256;
constexpr int kLanes = 8, kAccumulators = 12, kRegisters = 16;
inline V broadcast(float f) { return _mm256_set1_ps(f); }
inline V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline float hsum(V a) {
  alignas(32) float t[8];
  _mm256_store_ps(t, a);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#else
// Baseline build (-DLOWBAND_NATIVE=OFF): 4-lane vectors (SSE2 on x86-64, NEON
// on Arm), a multiply and an add (no FMA instruction; still 2 flops). Plain
// float chains would be packed 4 to a register by the vectoriser anyway, leaving
// only kAccumulators / 4 chains in flight.
using V = float __attribute__((vector_size(16)));
constexpr int kLanes = 4, kAccumulators = 12, kRegisters = 16;
inline V broadcast(float f) { return V{f, f, f, f}; }
inline V fmadd(V a, V b, V c) { return a * b + c; }
inline float hsum(V a) { return a[0] + a[1] + a[2] + a[3]; }
#endif
static_assert(kAccumulators >= 10, "too few chains to keep 2 FMA pipes of 5-cycle latency busy");
static_assert(kAccumulators + 2 <= kRegisters, "chains + mul + add must fit in registers");

// acc[j] = acc[j] * mul + add, `iters` times on each of the kAccumulators chains
// (acc[j] starts at seed + j in every lane); returns the sum of all lanes so the
// work is not elided. With mul = add = 1 that sum grows by exactly one per FMA
// lane executed: tests/kernels/test_peak_probe.cpp checks flops_per_chain by it.
inline float fma_chain(int64_t iters, float seed, float mul_f, float add_f) {
  V acc[kAccumulators];
  for (int j = 0; j < kAccumulators; ++j) acc[j] = broadcast(seed + float(j));
  const V mul = broadcast(mul_f), add = broadcast(add_f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 32
    for (int j = 0; j < kAccumulators; ++j) acc[j] = fmadd(acc[j], mul, add);
  }
  float total = 0.0f;
  for (int j = 0; j < kAccumulators; ++j) total += hsum(acc[j]);
  return total;
}

// Flops of one fma_chain call: an FMA counts as 2.
inline constexpr double flops_per_chain(int64_t iters) {
  return 2.0 * kAccumulators * kLanes * double(iters);
}
}  // namespace detail

// Iterations of one chain that last `seconds` at `gflops_per_thread`: trials
// sized in time, not iterations, as the work per iteration differs by ISA.
inline int64_t probe_iterations(double seconds, double gflops_per_thread) {
  return std::max<int64_t>(1, int64_t(seconds * gflops_per_thread * 1e9 / detail::flops_per_chain(1)));
}

// One trial: `threads` OpenMP threads each run one chain of `iters` iterations.
// Keep it >= ~2 ms: waking sleeping OpenMP threads (lowband's passive wait
// policy) is inside the timing, and 0.4-0.8 ms trials read 3-13 % low here.
inline double measure_fp32_gflops_once(int threads, int64_t iters) {
  static volatile float sink = 0.0f;
  float partial = 0.0f;
  const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : partial)
  // mul slightly below 1: values stay finite and normal (no denormal slow path).
  partial += detail::fma_chain(iters, 1.0f + 0.01f * omp_get_thread_num(), 0.9999999f, 1e-7f);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  sink = sink + partial;
  return detail::flops_per_chain(iters) * threads / seconds * 1e-9;
}

// Best of 5 trials of 2M iterations (~6 ms each with AVX-512 here, ~3 ms with
// AVX2). The best trial catches the highest clock of the moment (turbo); where
// the clock drops under sustained AVX-512 load (the Intel machine in
// kernels/README.md), bench_matmul also probes beside its calls.
inline double measure_peak_fp32_gflops(int threads) {
  double best_gflops = 0.0;
  for (int trial = 0; trial < 5; ++trial)
    best_gflops = std::max(best_gflops, measure_fp32_gflops_once(threads, 2'000'000));
  return best_gflops;
}

}  // namespace lowband::bench
