#pragma once
// bench-comm on a real communicator (--transport in-process|mpi|nccl): nccl-tests'
// table for the collectives as lowband's communicators run them on this machine
// (comm/bench.h), next to the simulated table bench-comm prints by default.
#include <functional>
#include <string>
#include <vector>

namespace lowband::cli {

struct TransportBenchArgs {
  std::string transport;                  // "in-process", "mpi" or "nccl"
  std::vector<std::string> sizes;         // empty: 1KB .. 256MB
  std::vector<std::string> collectives;   // empty: all_reduce, all_gather, reduce_scatter, broadcast
  int ranks = 0;                          // in-process: threads (0: scenario_ranks()); mpi: must match -np
  int iters = 0;                          // timed calls per row (0: ~0.2 s worth)
  bool per_call = false;                  // a comment line per timed call under each row
};

// One --sizes value in bytes: a size with its unit, above 0 ("0B" is an error naming --sizes).
double bench_size_bytes(const std::string& text);

// Prints the table (under MPI: rank 0 only). Throws InputError on bad
// arguments, CommandFailed (exit 1) when a result had wrong elements.
void run_transport_bench(const TransportBenchArgs& args, const std::function<int()>& scenario_ranks);

}  // namespace lowband::cli
