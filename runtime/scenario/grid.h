#pragma once
// A grid of scenarios, what `lowband sweep` trains and `lowband estimate` estimates
// (both above this folder): a base scenario document, the plain overrides, and the
// axes (from `--set key=v1,v2,...` or the file's top-level "sweep" section). Every
// point of the cartesian product (first axis outermost) is resolved into a
// validated Scenario named base name + a suffix of its values
// ("quickstart-bw300Mbps-r0.965"); points that train identically (they differ
// only in name, description and network) form one group, trained once.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/scenario/scenario.h"

namespace lowband::grid {

struct Axis {
  std::string key;                    // dotted scenario path, e.g. "network.bandwidth"
  std::vector<nlohmann::json> values; // in the order given
  std::string place;                  // where it was given, for errors: "--set k=a,b" or "FILE: sweep.k"
};

struct SweepSpec {
  nlohmann::json base;              // the scenario document without its "sweep" section
  std::string source;               // file path, or "builtin:NAME"
  std::vector<std::string> sets;    // plain overrides "k=v", applied to base before each point's values
  std::vector<Axis> axes;
};

struct SweepPoint {
  std::string name;                               // also its run directory under the sweep directory
  std::vector<std::pair<std::string, nlohmann::json>> settings;  // one per axis, in axis order
  Scenario scenario;                              // resolved and validated
};

struct SweepPlan {
  SweepSpec spec;
  std::string base_name;                    // the scenario's name, before the points' suffixes
  std::vector<SweepPoint> points;           // the cartesian product, first axis outermost
  std::vector<std::vector<size_t>> groups;  // point indices that train identically; the first trains
};

// Splits "a,[1,2],\"x,y\"" at its top-level commas (not inside [] {} or "").
std::vector<std::string> split_top_level(const std::string& text);

// A --set or sweep value as apply_overrides reads it: JSON when it parses, else a string.
// Errors name `place` (the --set flag) and `key` (the path the value goes to).
nlohmann::json parse_set_value(const std::string& text, const std::string& place = "--set",
                               const std::string& key = "");

// Builds the spec from a scenario file's text: its "sweep" section (removed from
// base) gives axes in the file's order; each --set with a top-level comma in its
// value is an axis (replacing a section axis of the same key); the other --sets are
// plain overrides (one of a section axis's key fixes it: the axis is dropped).
// InputError naming the flag, "SOURCE: sweep.KEY" or the JSON syntax error.
SweepSpec make_spec(const std::string& text, const std::string& source, const std::vector<std::string>& sets);

// `lowband sweep --seeds N`: an innermost axis training.seed = s, s+1, ..., s+N-1,
// s the base scenario's seed (its plain --sets applied; the default where it has
// none), so every point runs N seeds and `report` groups them. InputError naming
// "--seeds" when N is not 1..kMaxSeeds or training.seed is already an axis.
void add_seed_axis(SweepSpec& spec, int seeds);
inline constexpr int kMaxSeeds = 1000;  // intervals stop narrowing long before

// Resolves every point and groups them. InputError naming the axis's flag or sweep
// path and the point, or the plain --set / source, when a point does not validate.
SweepPlan plan_sweep(const SweepSpec& spec);

// The most points a grid may have (InputError naming the last axis past it): a
// grid is planned whole, one parsed scenario per point, before anything runs
// (125,000 points planned in 5.4 s and 514 MB; four axes of 50 values, 6.25 M
// points, would need ~25 GB; an estimate grid of 100,000 points takes hours).
inline constexpr int64_t kMaxSweepPoints = 100000;

// The spec as a scenario file with a "sweep" section (what SWEEP_DIR/sweep.json
// holds): make_spec of its dump, with no sets, gives back the same points.
nlohmann::ordered_json sweep_document(const SweepSpec& spec);

// "network.bandwidth=80Mbps, compression.ratio=0.9"
std::string describe_settings(const std::vector<std::pair<std::string, nlohmann::json>>& settings);

}  // namespace lowband::grid
