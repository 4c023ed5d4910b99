#pragma once
// Pieces of parse_scenario, split by section. Each throws SchemaError.
#include "runtime/scenario/json_reader.h"
#include "runtime/scenario/scenario.h"

namespace lowband::scenario_detail {

// The "network" section (required) of the document `root`.
sim::NetworkSpec parse_network(const ObjectReader& root);
// The optional "devices" section; node indices are checked against `nodes`.
DeviceConfig parse_devices(const ObjectReader& root, int nodes);
// The optional "projection" section (parse_projection.cpp).
ProjectionConfig parse_projection(const ObjectReader& root);
// The whole document, with the checks across sections.
Scenario parse_document(const json& document);

// Parses JSON text; a syntax error names source:line:column, a duplicate key its path.
json parse_json_text(const std::string& text, const std::string& source);
// Validates `document` (overrides already applied); an error at or under an
// overridden path names the --set flag that set it, any other names `source`.
Scenario parse_with_overrides(const json& document, const std::string& source,
                              const std::vector<std::string>& overrides);

// Largest node count a scenario may ask for (SimGrid replays stay tractable).
constexpr int kMaxNodes = 1 << 16;

}  // namespace lowband::scenario_detail
