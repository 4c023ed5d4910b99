#pragma once
// nccl-tests for a real communicator: each collective run on inputs whose result
// is known exactly (small integers, whose sums every float type holds exactly),
// counted wrong element by element, and timed. Used by `lowband bench-comm
// --transport ...` and by the tests of every communicator.
#include <cstdint>
#include <ostream>
#include <vector>

#include "comm/communicator.h"

namespace lowband::comm {

enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast };
const char* to_string(Collective collective);
const char* to_string(DType type);

// nccl-tests' bus bandwidth factor: all_reduce 2(n-1)/n, all_gather and
// reduce_scatter (n-1)/n, broadcast 1.
double bus_bandwidth_factor(Collective collective, int ranks);

// Runs `collective` once over `count` elements in all (all_reduce and broadcast:
// the buffer; all_gather: the output, even_counts(count, size) from each rank;
// reduce_scatter: the input, each rank getting its even_counts share), every
// rank's input filled with exact values. Returns the number of wrong elements on
// this rank. Every rank of comm calls it together. u8 has no sums: only
// all_gather and broadcast take it (others throw std::logic_error).
int64_t run_checked(Communicator& comm, Collective collective, int64_t count, DType type, int root = 0);

struct BenchRow {
  Collective collective = Collective::all_reduce;
  DType type = DType::f32;
  int ranks = 0;
  int64_t count = 0;       // elements, as run_checked counts them
  double size_bytes = 0;   // count x element size (nccl-tests' "size")
  double time_us = 0;      // per call: the mean over the timed calls of the slowest rank's time
  double algbw_gb_s = 0;   // size / time
  double busbw_gb_s = 0;   // algbw x bus_bandwidth_factor
  int64_t wrong = 0;       // wrong elements over all ranks, from one checked call
  std::vector<double> call_us;         // each timed call, the slowest rank's time
  std::vector<double> call_started_s;  // when rank 0 started it (steady_clock: CLOCK_MONOTONIC on Linux)
};

// One checked call, `warmup` untimed calls, then `iters` timed ones (on zeros, so
// repeated sums stay finite; iters <= 0: as many as fill ~0.2 s, 5..1000, from the
// slowest rank's time for one call), each started on every rank together. Every
// rank calls it together; every rank gets the row.
BenchRow bench_collective(Communicator& comm, Collective collective, int64_t count, DType type, int warmup,
                          int iters);

// nccl-tests' columns: size, count, type, redop, root, time, algbw, busbw, #wrong.
void print_bench_header(std::ostream& out);
void print_bench_row(std::ostream& out, const BenchRow& row);
// One comment line per timed call of the row (bench-comm --per-call).
void print_bench_calls(std::ostream& out, const BenchRow& row);

}  // namespace lowband::comm
