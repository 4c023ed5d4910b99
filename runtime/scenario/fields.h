#pragma once
// The scenario's keys, one declarative table per section: name, type, unit,
// range or choices, default, when it applies, one line of documentation, and
// (for the keys read generically) how to read and write the value. Parsing
// takes each section's known keys from here and reads the generic ones,
// to_json writes them, scenario_difference compares what to_json writes, and
// scenarios/README.md's key tables and docs/scenario.schema.json are
// generated from it (field_docs.h).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/scenario/scenario.h"

namespace lowband::scenario_detail {
class ObjectReader;
}

namespace lowband::fields {

enum class Kind { integer, number, boolean, string, choice, bandwidth, duration, size, array, object };

// Where a key applies: always (key empty), or while the section's `key` is one of `values`.
struct Applies {
  std::string key;
  std::vector<std::string> values;
};

struct Field {
  std::string key;                   // within its section: "layers"
  Kind kind = Kind::integer;
  std::string type;                  // as the README's type column reads: "integer ≥ 1", "bandwidth"
  std::string unit;                  // what the number counts ("tokens", "steps"), "" when none
  double lo = -1e300, hi = 1e300;    // integer and number bounds (inclusive unless *_open)
  bool lo_open = false, hi_open = false;
  std::vector<std::string> choices;  // Kind::choice, and integers with a few allowed values
  std::string default_text;          // "**required**", "`2`", "`heads`"
  Applies applies;
  std::string doc;                   // one line
  std::string example;               // a valid value other than the default (JSON text), for the tests;
                                     // "" where the key is never written (compression.ratio) or is a section
  std::string example_from;          // the value the test changes from ("" : the default)
  std::vector<std::string> example_sets;  // other --sets the example needs
  // Generic keys: read into / write from the Scenario (null: the section's own code does it).
  std::function<void(const scenario_detail::ObjectReader&, Scenario&)> read;
  std::function<nlohmann::json(const Scenario&)> write;
  // Written only where this holds as well (k_ratio: no k_rank given); null: wherever it applies.
  std::function<bool(const Scenario&)> written;

  bool required() const { return default_text == "**required**"; }
};

struct Section {
  std::string path;                  // "" (top level), "model", "parallel.data_sync"
  std::string title;                 // the README's heading
  std::vector<std::string> setup;    // --set overrides under which every key of it can be given (tests)
  std::vector<Field> fields;

  std::vector<std::string> keys() const;
  const Field& field(const std::string& key) const;
};

// Every section, in the README's order.
const std::vector<Section>& sections();
const Section& section(const std::string& path);

// Reads the section's generic keys into `s` (the reader knows the section's keys).
void read_generic(const Section& section, const scenario_detail::ObjectReader& r, Scenario& s);
// Writes the generic keys that apply (their `applies` met by `out`'s values so far) into `out`.
void write_generic(const Section& section, const Scenario& s, nlohmann::json& out);

// The per-section tables (fields_*.cpp).
Section top_level_section();
Section model_section();
Section parallel_section();
Section data_sync_section();
Section compression_section();
Section boundary_section();
Section network_section();
Section devices_section();
Section training_section();
Section projection_section();

}  // namespace lowband::fields
