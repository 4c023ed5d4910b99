#pragma once
// LOWBAND_BENCHMARK_MAIN(): Google Benchmark's BENCHMARK_MAIN(), but idle
// OpenMP threads sleep instead of spinning, as in lowband itself
// (kernels/omp_wait_policy.h; OMP_WAIT_POLICY or GOMP_SPINCOUNT override it), so
// a benchmark on a shared machine measures our kernels, not a fight for cores.
#include <benchmark/benchmark.h>

#include "kernels/omp_wait_policy.h"

#define LOWBAND_BENCHMARK_MAIN()                                      \
  int main(int argc, char** argv) {                                   \
    lowband::kernels::limit_omp_spinning_by_default(argv);            \
    benchmark::Initialize(&argc, argv);                               \
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1; \
    benchmark::RunSpecifiedBenchmarks();                              \
    benchmark::Shutdown();                                            \
    return 0;                                                         \
  }
