#pragma once
// Field-by-field comparison of two scenarios (Scenario::source is ignored), naming
// the first field that differs: for tests and for telling whether two runs used the
// same settings.
#include <string>

#include "runtime/scenario/scenario.h"

namespace lowband {

// Empty when equal; otherwise the first differing field, e.g. "network.link.latency_s: 0.001 vs 0.002".
std::string scenario_difference(const Scenario& a, const Scenario& b);

}  // namespace lowband
