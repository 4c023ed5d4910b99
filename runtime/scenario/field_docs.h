#pragma once
// What the field tables (fields.h) generate for people and editors: the key
// tables of scenarios/README.md and docs/scenario.schema.json. `lowband
// scenario-docs --write` rewrites both; a test fails while either is stale.
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/scenario/fields.h"

namespace lowband::fields {

// The markdown table of one section: | key | type | default | |.
std::string readme_table(const Section& section);

// `readme` with the text between each "<!-- fields: PATH -->" line and the next
// "<!-- /fields -->" line replaced by that section's table. std::invalid_argument
// for an unknown section or a marker left open.
std::string with_generated_tables(const std::string& readme);

// The JSON Schema (draft 2020-12) of a scenario file, with its text as written.
nlohmann::ordered_json json_schema();
std::string json_schema_text();

}  // namespace lowband::fields
