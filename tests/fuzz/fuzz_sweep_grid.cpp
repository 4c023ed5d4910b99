// libFuzzer target: the grid flags of `lowband sweep` and `lowband estimate` — a
// scenario file with its "sweep" section, and --set flags whose comma lists are
// axes (runtime/scenario/grid.h: make_spec, then plan_sweep resolving every point).
// The input is the file's text, then optionally a NUL byte and one --set value
// per line, as fuzz_scenario's. Any error but lowband::InputError (exit 2) is a
// bug (exit 1) and stops the fuzzer, as do crashes, leaks and hangs. Grids of
// more than 64 points are only specified, not planned, so that one input stays
// fast (the limit itself is kMaxSweepPoints's test). Seeds: scenarios/
// (scripts/fuzz-smoke.sh).
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "runtime/scenario/grid.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [text, sets] = lowband::fuzz::scenario_input(data, size);
  try {
    const lowband::grid::SweepSpec spec = lowband::grid::make_spec(text, "fuzz.json", sets);
    size_t points = 1;
    for (const auto& axis : spec.axes)
      if ((points *= axis.values.size()) > 64) break;
    if (points <= 64) lowband::grid::plan_sweep(spec);
  } catch (const lowband::InputError&) {
  }
  return 0;
}
