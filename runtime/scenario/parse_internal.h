#pragma once
// Pieces of parse_scenario, split by section. Each throws SchemaError.
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "runtime/scenario/json_reader.h"
#include "runtime/scenario/scenario.h"

namespace lowband::scenario_detail {

// Throws SchemaError "PATH: WHAT"; `related` are the other paths to blame (a --set of one names its flag).
[[noreturn]] void fail(const std::string& path, const std::string& what, std::vector<std::string> related = {});

// Fails at r's `key` when the reader's `method` is none of `methods` (a key of
// another method is an error, not ignored, so a typo'd method cannot hide it).
void only_with(const ObjectReader& r, const std::string& key, const std::string& method,
               const std::vector<std::string>& methods, const std::string& method_key = "method");

// The "network" section (required) of the document `root`; `source` (the scenario
// file, "builtin:NAME" or another name) places relative trace files.
sim::NetworkSpec parse_network(const ObjectReader& root, const std::string& source);
// network.dynamics of the network reader `r` (parse_dynamics.cpp), against the rest
// of `net` (topology, nodes, model, simgrid); trace files are read here.
std::vector<sim::NetworkDynamic> parse_dynamics(const ObjectReader& r, const sim::NetworkSpec& net,
                                                const std::string& source);
// network.restart of the network reader `r` (parse_dynamics.cpp), once `net`'s
// dynamics are parsed: it needs a state trace to act on.
std::optional<sim::RestartPolicy> parse_restart(const ObjectReader& r, const sim::NetworkSpec& net);
// An index into `count` things ("node", "cluster") at `path`.
int index_in(const json& v, const std::string& path, int count, const char* thing);
// r's "between": [a, b], two distinct indices below `count`, returned with a < b.
std::pair<int, int> between(const ObjectReader& r, int count, const char* thing);
// The optional "devices" section; node indices are checked against `nodes`.
DeviceConfig parse_devices(const ObjectReader& root, int nodes);
// The optional "projection" section (parse_projection.cpp); an inline scenario's
// files are placed by `source` too.
ProjectionConfig parse_projection(const ObjectReader& root, const std::string& source);
// parallel.stage_layers, microbatches and schedule of the "parallel" reader `r` (parse_pipeline.cpp).
void parse_stages(const ObjectReader& r, ParallelConfig& p);
// parallel.data_sync of the "parallel" reader `r` (parse_data_sync.cpp; default: all_reduce).
DataSyncConfig parse_data_sync(const ObjectReader& r);
// compression.boundary of the "compression" reader `r` (default: none).
BoundaryConfig parse_boundary(const ObjectReader& r);
// The pipeline's checks across sections: stages against model.layers, microbatches
// against training.batch_size, the boundary codec against the model and the stages.
void check_pipeline(const Scenario& s);
// Replicas of different context degrees (layout_check.cpp): checked before the
// pipeline's and boundary's checks, which read the first replica's degree.
void check_replica_contexts(const Scenario& s);
// The layouts no trainer runs (layout_check.cpp; check_layout outside).
void check_layout_schema(const Scenario& s);
// Keys of a dimension the whole scenario's layout lacks (parse only, not a replica's scenario).
void check_dimension_keys_in_effect(const Scenario& s);
// The whole document, with the checks across sections; `source` as for parse_network.
Scenario parse_document(const json& document, const std::string& source);

// A --set is text from the command line, not JSON: it may hold any bytes. One
// that is not UTF-8 is refused here, naming `place`, before it becomes a JSON
// string (which JSON cannot write back: nlohmann's dump throws).
void require_utf8(const std::string& text, const std::string& place);

// Parses JSON text; a syntax error names source:line:column, a duplicate key its path.
json parse_json_text(const std::string& text, const std::string& source);

// A scenario is small: bigger, deeper or longer texts are refused (InputError)
// before they cost time (validation is linear within these) or a megabyte error line.
struct json_limits {
  size_t max_bytes = 4u << 20;    // 4 MiB; the largest shipped scenario is a few KB
  size_t max_depth = 32;          // the schema nests 4 levels
  size_t max_elements = 10000;    // per array or object (network.overrides: one per pair of nodes of interest)
};
// parse_json_text with the limits given; errors name `source` (with line and
// column) or, when source is "", `place`. syntax_errors_throw false: nullopt for
// text that is not JSON (a --set value such as 300Mbps), but an out-of-range number
// or a limit is still an error.
// `value_path`: where the text goes in the scenario (a --set's key), named in errors
// instead of "(top level)".
std::optional<json> parse_json_limited(const std::string& text, const std::string& source, const std::string& place,
                                       bool syntax_errors_throw, const json_limits& limits = {},
                                       const std::string& value_path = "");
// A file a scenario names (`written`): where it is, a relative path looked for in the
// working directory, else beside the scenario file `source`; `written` itself when
// nowhere (or when `source` is a built-in).
std::string locate_file(const std::string& written, const std::string& source);
// "network": "PATH" names a network file (scenarios/networks/): the object it holds
// becomes the network section. Read when the file is read and when a --set gives the
// path (apply_overrides), so that a later --set network.KEY applies on top of it.
// Found as locate_file finds it; errors name `place` (the scenario file or the --set),
// or the network file and its line and column for JSON that does not parse. A
// document whose network is not a string is left alone.
void include_network_file(json& document, const std::string& source, const std::string& place);
// Validates `document` (overrides already applied); an error at or under an
// overridden path names the --set flag that set it, any other names `source`.
Scenario parse_with_overrides(const json& document, const std::string& source,
                              const std::vector<std::string>& overrides);

// Largest node count a scenario may ask for (SimGrid replays stay tractable).
constexpr int kMaxNodes = 1 << 16;
// Largest count (layers, steps, ranks of a basis) a scenario may give.
constexpr int64_t kMaxInt = 1 << 30;
// Most MoS rotation generators per key (compression.rotation_params): the codec
// keeps m² products of (head_dim, rank) per key.
constexpr int64_t kMaxRotationParams = 16;

}  // namespace lowband::scenario_detail
