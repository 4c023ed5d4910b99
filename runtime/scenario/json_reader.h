#pragma once
// Strict reading of a JSON object: every key must be known, every value of the
// expected type and range, and each error names the value's JSON path. Internal to
// runtime/scenario: parse_scenario turns a SchemaError into an InputError naming the
// file (or the --set flag that put the bad value there).
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace lowband::scenario_detail {

using nlohmann::json;

class SchemaError : public std::runtime_error {
 public:
  // `path` is the dotted JSON path of the offending key or value; `message` is the
  // whole one-line text (it names the path itself). `related` lists other paths
  // whose values share the blame (for checks across keys), so that an error caused
  // by a --set of any of them names that flag.
  SchemaError(std::string path, const std::string& message, std::vector<std::string> related = {})
      : std::runtime_error(message), path_(std::move(path)), related_(std::move(related)) {}
  const std::string& path() const { return path_; }
  const std::vector<std::string>& related() const { return related_; }

 private:
  std::string path_;
  std::vector<std::string> related_;
};

// "network" + "bandwidth" -> "network.bandwidth"; array elements: "network.overrides.0".
std::string join_path(const std::string& parent, const std::string& key);
// "" -> "top level", otherwise the path itself.
std::string describe_path(const std::string& path);
size_t edit_distance(const std::string& a, const std::string& b);
// `unknown key "k" at P (did you mean "x"?)`, or listing the known keys when none is
// close; `noun` replaces "key" (e.g. "device profile").
std::string unknown_key_message(const std::string& key, const std::string& parent_path,
                                const std::vector<std::string>& known, const std::string& noun = "key");

// Bounds of a number, with a description for error messages.
struct Bounds {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false, hi_open = false;
  static Bounds at_least(double lo) { return {lo, std::numeric_limits<double>::infinity(), false, false}; }
  static Bounds above(double lo) { return {lo, std::numeric_limits<double>::infinity(), true, false}; }
  static Bounds half_open(double lo, double hi) { return {lo, hi, false, true}; }
  static Bounds closed(double lo, double hi) { return {lo, hi, false, false}; }
  bool contains(double v) const;
  std::string describe() const;  // ">= 1", "> 0", "in [0, 1)"
};

// Typed views of one JSON value at `path`; each throws SchemaError on a mismatch.
int64_t as_integer(const json& v, const std::string& path, int64_t lo, int64_t hi);
uint64_t as_uint64(const json& v, const std::string& path);
double as_number(const json& v, const std::string& path, const Bounds& bounds);
bool as_bool(const json& v, const std::string& path);
std::string as_string(const json& v, const std::string& path);
std::string as_choice(const json& v, const std::string& path, const std::vector<std::string>& options);
double as_bandwidth(const json& v, const std::string& path);  // bytes per second, > 0
double as_duration(const json& v, const std::string& path);   // seconds, >= 0
double as_bytes(const json& v, const std::string& path);      // bytes, >= 0
const json& as_array(const json& v, const std::string& path);

class ObjectReader {
 public:
  // Throws unless `value` is an object whose keys are all in `known`.
  ObjectReader(const json& value, std::string path, std::vector<std::string> known);

  const std::string& path() const { return path_; }
  std::string path_of(const std::string& key) const { return join_path(path_, key); }
  bool has(const std::string& key) const;
  const json& need(const std::string& key) const;  // throws "missing required key"
  // The sub-object at `key` (required), with its own known keys.
  ObjectReader object(const std::string& key, std::vector<std::string> known) const;

  int64_t integer(const std::string& key, int64_t lo, int64_t hi) const;
  int64_t integer_or(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const;
  double number(const std::string& key, const Bounds& b) const;
  double number_or(const std::string& key, double fallback, const Bounds& b) const;
  bool boolean_or(const std::string& key, bool fallback) const;
  std::string string(const std::string& key) const;
  std::string string_or(const std::string& key, const std::string& fallback) const;
  std::string choice(const std::string& key, const std::vector<std::string>& options) const;
  std::string choice_or(const std::string& key, const std::string& fallback,
                        const std::vector<std::string>& options) const;
  double bandwidth(const std::string& key) const;
  double bandwidth_or(const std::string& key, double fallback) const;
  double duration(const std::string& key) const;
  double duration_or(const std::string& key, double fallback) const;
  double bytes(const std::string& key) const;

 private:
  const json& value_;
  std::string path_;
  std::vector<std::string> known_;
};

}  // namespace lowband::scenario_detail
