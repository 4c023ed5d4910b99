// matmul throughput at a small model's training-step shapes (n = 4096 tokens,
// d = 256, ffn = 768) and at squares, as GFLOP/s and % of the probed fp32 peak.
// CPU: oneDNN sgemm on all OpenMP threads. The peak moves with the clock, which
// on this machine drops under sustained AVX-512 load, so it is probed beside the
// calls: a ~3 ms probe (untimed) before every call, median = peak_GFLOP/s and
// pct_peak; burst_peak_GFLOP/s and pct_burst_peak use the best of 5 longer
// probes before the case (the turbo clock). CUDA (where a device is present):
// cuBLAS on device buffers, against the GPU's probed peak.
//
// Every CPU case runs twice: align64 (64-byte aligned buffers, as the model's,
// common/aligned_buffer.h) and align16 (the same 16 bytes past a cache line, as
// glibc's malloc places a std::vector), so the two can be compared side by side.
//   ./bench_matmul --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//                  --benchmark_enable_random_interleaving=true
// (interleaving alternates the cases' repetitions, so load on a shared machine
// falls on both variants alike; --benchmark_filter=align64 for the table alone).
// Besides mean and median, each case reports its best repetition: the _min row
// (time) and the _max row (GFLOP/s, pct_peak): the kernel undisturbed by other
// processes; the median is what a training step sees on a shared machine.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "bench/peak.h"
#include "common/aligned_buffer.h"
#include "kernels/backend.h"
#include "kernels/device.h"
#include "kernels/matmul.h"
#include "kernels/omp_wait_policy.h"

namespace {

using lowband::kernels::Trans;

struct GemmCase {
  const char* label;  // what the product is in a training step
  Trans ta, tb;
  int64_t M, N, K;
};

// Linear layers Y = X·W with X (n, in), W (in, out): forward NN, input gradient
// dX = dY·Wᵀ (NT), weight gradient dW = Xᵀ·dY (TN, K = n tokens).
const std::vector<GemmCase>& cases() {
  static const std::vector<GemmCase> all = {
      {"fwd_qkvo", Trans::no, Trans::no, 4096, 256, 256},
      {"fwd_up_gate", Trans::no, Trans::no, 4096, 768, 256},
      {"fwd_down", Trans::no, Trans::no, 4096, 256, 768},
      {"dx_qkvo", Trans::no, Trans::yes, 4096, 256, 256},
      {"dx_up_gate", Trans::no, Trans::yes, 4096, 256, 768},
      {"dx_down", Trans::no, Trans::yes, 4096, 768, 256},
      {"dw_qkvo", Trans::yes, Trans::no, 256, 256, 4096},
      {"dw_up_gate", Trans::yes, Trans::no, 256, 768, 4096},
      {"dw_down", Trans::yes, Trans::no, 768, 256, 4096},
      {"dw_qkvo_as_NT", Trans::no, Trans::yes, 256, 256, 4096},  // the weak layout, for the record
      {"square", Trans::no, Trans::no, 512, 512, 512},
      {"square", Trans::no, Trans::no, 1024, 1024, 1024},
      {"square", Trans::no, Trans::no, 1536, 1536, 1536},
      {"square", Trans::no, Trans::no, 2048, 2048, 2048},
  };
  return all;
}

std::vector<float> random_matrix(int64_t rows, int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> m(size_t(rows * cols));
  for (auto& x : m) x = dist(rng);
  return m;
}

// A matrix whose first element sits `offset_bytes` (a multiple of 4) past a
// 64-byte boundary.
struct HostMatrix {
  lowband::AlignedVector<float> storage;
  float* data = nullptr;
  HostMatrix(const std::vector<float>& values, size_t offset_bytes)
      : storage(values.size() + offset_bytes / sizeof(float)) {
    data = storage.data() + offset_bytes / sizeof(float);
    std::copy(values.begin(), values.end(), data);
  }
};

// Rate counters: GFLOP/s, and the same as % of peak.
void set_counters(benchmark::State& state, const GemmCase& c, double peak_gflops) {
  const double gflop = 2.0 * double(c.M) * double(c.N) * double(c.K) * 1e-9;
  state.counters["GFLOP/s"] = benchmark::Counter(gflop, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["pct_peak"] =
      benchmark::Counter(gflop * 100.0 / peak_gflops, benchmark::Counter::kIsIterationInvariantRate);
}

void bench_cpu(benchmark::State& state, GemmCase c, size_t offset_bytes) {
  const int64_t a_rows = c.ta == Trans::yes ? c.K : c.M, a_cols = c.ta == Trans::yes ? c.M : c.K;
  const int64_t b_rows = c.tb == Trans::yes ? c.N : c.K, b_cols = c.tb == Trans::yes ? c.K : c.N;
  const HostMatrix A(random_matrix(a_rows, a_cols, 1), offset_bytes);
  const HostMatrix B(random_matrix(b_rows, b_cols, 2), offset_bytes);
  HostMatrix C(std::vector<float>(size_t(c.M * c.N)), offset_bytes);
  auto run = [&] {
    lowband::kernels::cpu::matmul(c.ta, c.tb, c.M, c.N, c.K, 1.0f, A.data, a_cols, B.data, b_cols,
                                  0.0f, C.data, c.N);
  };
  run();  // oneDNN generates its kernel on the first call: keep that out of the timing
  const int threads = omp_get_max_threads();
  const double burst_peak = lowband::bench::measure_peak_fp32_gflops(threads);
  // A short probe before every call, untimed: the clock the call runs at. ~3 ms
  // at the burst rate whatever the ISA (bench/peak.h: shorter trials read low).
  const int64_t beside_iters = lowband::bench::probe_iterations(3e-3, burst_peak / threads);
  std::vector<double> beside;
  for (auto _ : state) {
    state.PauseTiming();
    beside.push_back(lowband::bench::measure_fp32_gflops_once(threads, beside_iters));
    state.ResumeTiming();
    run();
    benchmark::DoNotOptimize(C.data);
    benchmark::ClobberMemory();
  }
  std::sort(beside.begin(), beside.end());
  const double peak_beside = beside.empty() ? burst_peak : beside[beside.size() / 2];
  set_counters(state, c, peak_beside);
  state.counters["peak_GFLOP/s"] = peak_beside;
  state.counters["burst_peak_GFLOP/s"] = burst_peak;
  state.counters["pct_burst_peak"] = benchmark::Counter(
      2.0 * double(c.M) * double(c.N) * double(c.K) * 1e-9 * 100.0 / burst_peak,
      benchmark::Counter::kIsIterationInvariantRate);
}

// The GPU's kernels through the backend table, so this file links without CUDA too.
const lowband::kernels::Backend& gpu() { return lowband::kernels::backend(lowband::kernels::Device::cuda); }

void bench_cuda(benchmark::State& state, GemmCase c, double peak_gflops) {
  const int64_t a_cols = c.ta == Trans::yes ? c.M : c.K, b_cols = c.tb == Trans::yes ? c.K : c.N;
  const size_t a_bytes = size_t(c.M * c.K) * 4, b_bytes = size_t(c.K * c.N) * 4;
  const size_t c_bytes = size_t(c.M * c.N) * 4;
  const auto A = random_matrix(c.M, c.K, 1), B = random_matrix(c.K, c.N, 2);
  float* dA = static_cast<float*>(gpu().alloc(a_bytes));
  float* dB = static_cast<float*>(gpu().alloc(b_bytes));
  float* dC = static_cast<float*>(gpu().alloc(c_bytes));
  gpu().upload(dA, A.data(), a_bytes);
  gpu().upload(dB, B.data(), b_bytes);
  auto run = [&] {
    gpu().matmul(c.ta, c.tb, c.M, c.N, c.K, 1.0f, dA, a_cols, dB, b_cols, 0.0f, dC, c.N);
  };
  run();
  gpu().synchronize();
  for (auto _ : state) {
    run();
    gpu().synchronize();
  }
  set_counters(state, c, peak_gflops);
  gpu().release(dA);
  gpu().release(dB);
  gpu().release(dC);
}

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
double max_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

std::string name_of(const char* backend, const GemmCase& c) {
  return std::string(backend) + "/" + c.label + "/" + (c.ta == Trans::yes ? "T" : "N") +
         (c.tb == Trans::yes ? "T" : "N") + "/" + std::to_string(c.M) + "x" +
         std::to_string(c.N) + "x" + std::to_string(c.K);
}

}  // namespace

int main(int argc, char** argv) {
  lowband::kernels::limit_omp_spinning_by_default(argv);  // kernels/omp_wait_policy.h
  benchmark::Initialize(&argc, argv);
  const int threads = omp_get_max_threads();
  const double cpu_peak = lowband::bench::measure_peak_fp32_gflops(threads);
  benchmark::AddCustomContext("cpu_threads", std::to_string(threads));
  benchmark::AddCustomContext("cpu_peak_fp32_gflops", std::to_string(cpu_peak));
  for (const GemmCase& c : cases())
    for (const size_t offset_bytes : {0, 16})
      benchmark::RegisterBenchmark(
          (name_of("cpu", c) + (offset_bytes == 0 ? "/align64" : "/align16")).c_str(), bench_cpu, c,
          offset_bytes)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->ComputeStatistics("min", min_of)
          ->ComputeStatistics("max", max_of);
  std::string why;
  if (lowband::kernels::cuda_available(&why)) {
    const double gpu_peak = lowband::kernels::cuda::measure_peak_fp32_gflops();
    benchmark::AddCustomContext("gpu_peak_fp32_gflops", std::to_string(gpu_peak));
    for (const GemmCase& c : cases())
      benchmark::RegisterBenchmark(name_of("cuda", c).c_str(), bench_cuda, c, gpu_peak)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
  } else {
    benchmark::AddCustomContext("cuda", "skipped: " + why);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
