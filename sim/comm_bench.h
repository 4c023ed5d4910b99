#pragma once
// nccl-tests for a simulated network: each collective at each size, replayed on
// the network, with algorithm bandwidth S/t, bus bandwidth (algbw x
// bus_bandwidth_factor) and, where one exists, the closed-form alpha-beta time.
#include <ostream>
#include <vector>

#include "sim/collectives.h"
#include "sim/network.h"

namespace lowband::sim {

struct CommBenchRow {
  Collective collective = Collective::all_reduce;
  int ranks = 0;
  double size_bytes = 0;           // S, as defined in sim/collectives.h
  double time_seconds = 0;         // simulated, until the last rank is done
  double algbw_bytes_per_s = 0;    // S / time
  double busbw_bytes_per_s = 0;    // algbw * bus_bandwidth_factor(collective, ranks)
  double expected_seconds = 0;     // closed form; NaN where the network has none
  double deviation = 0;            // time / expected - 1; NaN where no closed form
};

// ranks: the participants (empty: every node); p2p runs from the first to the
// second (no p2p rows with fewer than two). All rows are replayed in one child
// process (sim::replay_batch), ordered by size, then by collective.
std::vector<CommBenchRow> run_comm_bench(const NetworkSpec& network, const std::vector<int>& ranks,
                                         const std::vector<double>& sizes_bytes,
                                         const std::vector<Collective>& collectives);

// Rows deviating from their closed form by more than this count as wrong.
inline constexpr double kCommBenchTolerance = 1e-3;

// The network line, then a fixed-width table (size first, units in the header),
// then the count of rows off their closed form by more than kCommBenchTolerance.
void print_comm_bench(std::ostream& out, const NetworkSpec& network, const std::vector<CommBenchRow>& rows);

}  // namespace lowband::sim
