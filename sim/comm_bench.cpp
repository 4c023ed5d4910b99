#include "sim/comm_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "sim/replay.h"

namespace lowband::sim {

std::vector<CommBenchRow> run_comm_bench(const NetworkSpec& network, const std::vector<int>& ranks_in,
                                         const std::vector<double>& sizes_bytes,
                                         const std::vector<Collective>& collectives) {
  std::vector<int> ranks = ranks_in;
  if (ranks.empty()) {
    ranks.resize(static_cast<size_t>(std::max(network.nodes, 0)));
    std::iota(ranks.begin(), ranks.end(), 0);
  }
  int graph_ranks = 0;
  for (int r : ranks) graph_ranks = std::max(graph_ranks, r + 1);
  const int p = static_cast<int>(ranks.size());

  std::vector<CommBenchRow> rows;
  std::vector<StepGraph> graphs;
  for (double size : sizes_bytes)
    for (Collective c : collectives) {
      if (c == Collective::p2p && p < 2) continue;  // no pair to send between
      StepGraph graph(graph_ranks);
      // Point-to-point runs between the first two participants.
      const std::vector<int> who = c == Collective::p2p ? std::vector<int>(ranks.begin(), ranks.begin() + std::min(p, 2))
                                                          : ranks;
      append_collective(graph, c, who, size, {}, to_string(c));
      graphs.push_back(std::move(graph));
      CommBenchRow row;
      row.collective = c;
      row.ranks = static_cast<int>(who.size());
      row.size_bytes = size;
      row.expected_seconds = expected_seconds(c, network, row.ranks, size);
      rows.push_back(row);
    }
  const std::vector<ReplayResult> results = replay_batch(network, graphs);
  for (size_t i = 0; i < rows.size(); ++i) {
    CommBenchRow& row = rows[i];
    row.time_seconds = results[i].step_seconds;
    row.algbw_bytes_per_s = row.time_seconds > 0 ? row.size_bytes / row.time_seconds : 0;
    row.busbw_bytes_per_s = row.algbw_bytes_per_s * bus_bandwidth_factor(row.collective, row.ranks);
    row.deviation = row.time_seconds / row.expected_seconds - 1;  // NaN propagates
  }
  return rows;
}

void print_comm_bench(std::ostream& out, const NetworkSpec& network, const std::vector<CommBenchRow>& rows) {
  char line[256];
  out << "# network: " << describe(network) << "\n";
  std::snprintf(line, sizeof line, "# %14s  %-14s %5s  %14s  %12s  %12s  %14s  %9s\n", "size(B)", "collective",
                "ranks", "time(ms)", "algbw(MB/s)", "busbw(MB/s)", "expected(ms)", "dev(%)");
  out << line;
  int wrong = 0, checked = 0;
  for (const CommBenchRow& r : rows) {
    const bool has_expected = std::isfinite(r.expected_seconds);
    checked += has_expected;
    char expected[32] = "-", deviation[32] = "-";
    if (has_expected) {
      std::snprintf(expected, sizeof expected, "%.4f", r.expected_seconds * 1e3);
      std::snprintf(deviation, sizeof deviation, "%+.3f", r.deviation * 100);
      if (!(std::fabs(r.deviation) <= kCommBenchTolerance)) ++wrong;
    }
    std::snprintf(line, sizeof line, "  %14.0f  %-14s %5d  %14.4f  %12.3f  %12.3f  %14s  %9s\n", r.size_bytes,
                  to_string(r.collective), r.ranks, r.time_seconds * 1e3, r.algbw_bytes_per_s / 1e6,
                  r.busbw_bytes_per_s / 1e6, expected, deviation);
    out << line;
  }
  if (checked == 0) {
    out << "# no closed form for this network (there is one for ideal stars and full meshes without overrides)\n";
    return;
  }
  std::snprintf(line, sizeof line, "# off the closed form by more than %.1f%%: %d of %d\n", kCommBenchTolerance * 100,
                wrong, checked);
  out << line;
}

}  // namespace lowband::sim
