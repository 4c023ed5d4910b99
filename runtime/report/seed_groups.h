#pragma once
// Runs that differ only by their seed (training.seed: data order and
// initialisation), grouped for `lowband report` and `plot`: their spread is the
// noise against which two arms are compared.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/report/run_dir_reader.h"

namespace lowband::report {

struct SeedGroup {
  std::string label;            // the runs' label without the seed
  std::vector<size_t> runs;     // indices into the runs, in the order loaded
  std::vector<int64_t> seeds;   // each run's training.seed (-1 where scenario.json has none)
};

// training.seed of scenario.json; nullopt when absent.
std::optional<int64_t> run_seed(const LoadedRun& run);

// Groups of runs whose scenario.json are equal but for name, description and
// training.seed, in the order of their first run. A group holds each seed once:
// a run repeating a seed (the same run loaded twice) starts a group of its own.
// Labels: outside a sweep the shared scenario name; in a sweep with a seed axis,
// the sweep's name and its other settings; made unique as assign_labels does.
std::vector<SeedGroup> group_by_seed(const std::vector<LoadedRun>& runs);

}  // namespace lowband::report
