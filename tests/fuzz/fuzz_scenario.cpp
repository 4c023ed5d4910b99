// libFuzzer target: a scenario file and --set overrides, as `lowband validate` and
// `lowband run --set` read them. The input is the file's text, then optionally a
// NUL byte and one override per line. Any error but lowband::InputError (exit 2)
// is a bug (exit 1) and stops the fuzzer, as do crashes, leaks and hangs.
// Seeds: scenarios/ (scripts/fuzz-smoke.sh).
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "runtime/scenario/load.h"
#include "runtime/scenario/parse_internal.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [text, sets] = lowband::fuzz::scenario_input(data, size);
  try {
    nlohmann::json document = lowband::scenario_detail::parse_json_text(text, "fuzz.json");
    lowband::apply_overrides(document, sets);
    const lowband::Scenario s = lowband::scenario_detail::parse_with_overrides(document, "fuzz.json", sets);
    // What the run directory records must read back (scenario.json, checkpoints).
    lowband::parse_scenario(lowband::to_json(s), "fuzz.json resolved");
  } catch (const lowband::InputError&) {
  }
  return 0;
}
