#pragma once
// Loading scenario files strictly. Every error is a lowband::InputError naming the
// place: the file (with line and column for invalid JSON) and the JSON path, or the
// --set flag that introduced the bad value. The key reference is scenarios/README.md.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "runtime/scenario/scenario.h"

namespace lowband {

// Reads, applies the overrides ("dotted.path=value"), validates. source = path.
Scenario load_scenario_file(const std::string& path, const std::vector<std::string>& overrides = {});

// A network file (scenarios/networks/: a network section alone, with "topology" and
// no "network"), as `lowband validate` checks one: the built-in default on one rank
// with it as its network. nullopt when `path` holds anything else (a scenario).
std::optional<Scenario> load_network_file(const std::string& path);

// A run's recorded scenario (its scenario.json, a checkpoint's copy), as
// load_scenario_file, but read as the lowband that resolved it meant it: keys whose
// default changed since get the value the run had (upgrade_recorded_scenario).
Scenario load_recorded_scenario_file(const std::string& path, const std::vector<std::string>& overrides = {});
// In place, for a mos scenario: compression.owner_kv "exact" without the key (resolved
// before 2026-11-27, when mos's default became "reconstructed"), and
// compression.compress_final_layer true without it (resolved before the final
// layer's K/V crossed uncompressed by default; both are always written for mos now),
// and compression.fit_during_lr_warmup true where warmup_steps (> 0) is below
// training.lr_warmup_steps and the key is absent (resolved before validation refused it).
// For topk, quantize and drop without compress_final_layer (resolved before the
// baselines had an uncompressed warm-up and final layer, when warmup_steps was
// written but did nothing): warmup_steps 0 and compress_final_layer true. For
// training.data_source "recall": no validation_fraction (recorded, never used).
void upgrade_recorded_scenario(nlohmann::json& document);

// Validates a parsed JSON document; `source` names it in errors and in Scenario::source.
Scenario parse_scenario(const nlohmann::json& document, const std::string& source);

// The resolved scenario with every knob explicit and units as exact strings:
// parse_scenario(to_json(s), ...) gives back s.
nlohmann::json to_json(const Scenario& scenario);

// Applies "dotted.path=value" overrides to a document in place. The value is parsed
// as JSON when it parses ("8", "true", "[0,1]", "\"x\""), else taken as a string
// ("300Mbps"). Numeric path parts index arrays (network.overrides.0.bandwidth; the
// index equal to the size appends); missing objects are created. Whether a key
// exists in the schema is checked later, by parse_scenario; errors in the path
// itself name the flag ("--set a.b=c"). network=PATH reads the network file at
// PATH (a relative path from the working directory) in place of the section.
void apply_overrides(nlohmann::json& document, const std::vector<std::string>& overrides);

// Built-in scenarios, embedded in the binary (each equals its file under scenarios/:
// "default" is scenarios/quickstart.json, the others scenarios/NAME.json).
Scenario builtin_scenario(const std::string& name, const std::vector<std::string>& overrides = {});
std::vector<std::string> builtin_scenario_names();
// The embedded JSON text of a built-in, and the file under scenarios/ it copies
// ("quickstart.json" for "default"); InputError for an unknown name.
const std::string& builtin_scenario_text(const std::string& name);
std::string builtin_scenario_file(const std::string& name);

}  // namespace lowband
