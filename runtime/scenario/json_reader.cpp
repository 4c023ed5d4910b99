#include "runtime/scenario/json_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/error.h"
#include "runtime/scenario/units.h"

namespace lowband::scenario_detail {
namespace {

// What a value is, for "expected X, got Y".
std::string got(const json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  std::string text = v.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  if (v.is_string()) return "a string (" + text + ")";
  if (v.is_boolean()) return "a boolean (" + text + ")";
  return text;
}

[[noreturn]] void expected(const std::string& path, const std::string& what, const json& v) {
  throw SchemaError(path, path + ": expected " + what + ", got " + got(v));
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// A quantity with a unit: the units module words the error; this adds the path.
template <typename Parse>
double as_quantity(const json& v, const std::string& path, const char* what, Parse parse) {
  if (!v.is_string()) expected(path, std::string(what) + " string with a unit", v);
  try {
    return parse(v.get<std::string>(), path);
  } catch (const InputError& e) {
    throw SchemaError(path, e.what());
  }
}

}  // namespace

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string describe_path(const std::string& path) { return path.empty() ? "top level" : path; }

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string unknown_key_message(const std::string& key, const std::string& parent_path,
                                const std::vector<std::string>& known, const std::string& noun) {
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const auto& k : known) {
    const size_t d = edit_distance(key, k);
    if (d < best_distance) best = k, best_distance = d;
  }
  std::string msg = "unknown " + noun + " \"" + key + "\" at " + describe_path(parent_path);
  // A suggestion only when it is plausibly a typo: at most a third of the letters wrong.
  if (!best.empty() && best_distance <= std::max<size_t>(2, std::max(key.size(), best.size()) / 3))
    return msg + " (did you mean \"" + best + "\"?)";
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  return msg + " (known " + noun + "s: " + list + ")";
}

bool Bounds::contains(double v) const {
  if (lo_open ? !(v > lo) : !(v >= lo)) return false;
  if (hi_open ? !(v < hi) : !(v <= hi)) return false;
  return true;
}

std::string Bounds::describe() const {
  const bool has_lo = std::isfinite(lo), has_hi = std::isfinite(hi);
  if (has_lo && has_hi)
    return std::string("in ") + (lo_open ? "(" : "[") + number_text(lo) + ", " + number_text(hi) +
           (hi_open ? ")" : "]");
  if (has_lo) return (lo_open ? "> " : ">= ") + number_text(lo);
  if (has_hi) return (hi_open ? "< " : "<= ") + number_text(hi);
  return "any";
}

int64_t as_integer(const json& v, const std::string& path, int64_t lo, int64_t hi) {
  const std::string what = "an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
  if (!v.is_number_integer()) expected(path, what, v);
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) expected(path, what, v);
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) expected(path, what, v);
  return x;
}

uint64_t as_uint64(const json& v, const std::string& path) {
  // -0 is read as a signed integer zero: it is 0.
  if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() == 0) return 0;
  if (!v.is_number_unsigned()) expected(path, "a non-negative integer", v);
  return v.get<uint64_t>();
}

double as_number(const json& v, const std::string& path, const Bounds& bounds) {
  if (!v.is_number()) expected(path, "a number " + bounds.describe(), v);
  const double x = v.get<double>();
  if (!bounds.contains(x)) expected(path, "a number " + bounds.describe(), v);
  return x;
}

bool as_bool(const json& v, const std::string& path) {
  if (!v.is_boolean()) expected(path, "true or false", v);
  return v.get<bool>();
}

std::string as_string(const json& v, const std::string& path) {
  if (!v.is_string()) expected(path, "a string", v);
  return v.get<std::string>();
}

std::string as_choice(const json& v, const std::string& path, const std::vector<std::string>& options) {
  std::string list;
  for (const auto& o : options) list += (list.empty() ? "\"" : " or \"") + o + "\"";
  if (!v.is_string()) expected(path, list, v);
  const std::string s = v.get<std::string>();
  if (std::find(options.begin(), options.end(), s) == options.end()) expected(path, list, v);
  return s;
}

double as_bandwidth(const json& v, const std::string& path) {
  return as_quantity(v, path, "a bandwidth", [](const std::string& s, const std::string& p) {
    return units::parse_bandwidth(s, p);
  });
}
double as_duration(const json& v, const std::string& path) {
  return as_quantity(v, path, "a duration", [](const std::string& s, const std::string& p) {
    return units::parse_duration(s, p);
  });
}
double as_bytes(const json& v, const std::string& path) {
  return as_quantity(v, path, "a size", [](const std::string& s, const std::string& p) {
    return units::parse_bytes(s, p);
  });
}

const json& as_array(const json& v, const std::string& path) {
  if (!v.is_array()) expected(path, "an array", v);
  return v;
}

ObjectReader::ObjectReader(const json& value, std::string path, std::vector<std::string> known)
    : value_(value), path_(std::move(path)), known_(std::move(known)) {
  if (!value_.is_object()) expected(describe_path(path_), "an object", value_);
  for (const auto& item : value_.items())
    if (std::find(known_.begin(), known_.end(), item.key()) == known_.end())
      throw SchemaError(path_of(item.key()), unknown_key_message(item.key(), path_, known_));
}

bool ObjectReader::has(const std::string& key) const { return value_.contains(key); }

const json& ObjectReader::need(const std::string& key) const {
  auto it = value_.find(key);
  if (it == value_.end())
    throw SchemaError(path_of(key), path_of(key) + ": required key \"" + key + "\" is missing");
  return *it;
}

ObjectReader ObjectReader::object(const std::string& key, std::vector<std::string> known) const {
  return ObjectReader(need(key), path_of(key), std::move(known));
}

int64_t ObjectReader::integer(const std::string& key, int64_t lo, int64_t hi) const {
  return as_integer(need(key), path_of(key), lo, hi);
}
int64_t ObjectReader::integer_or(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const {
  return has(key) ? integer(key, lo, hi) : fallback;
}
double ObjectReader::number(const std::string& key, const Bounds& b) const {
  return as_number(need(key), path_of(key), b);
}
double ObjectReader::number_or(const std::string& key, double fallback, const Bounds& b) const {
  return has(key) ? number(key, b) : fallback;
}
bool ObjectReader::boolean_or(const std::string& key, bool fallback) const {
  return has(key) ? as_bool(need(key), path_of(key)) : fallback;
}
std::string ObjectReader::string(const std::string& key) const { return as_string(need(key), path_of(key)); }
std::string ObjectReader::string_or(const std::string& key, const std::string& fallback) const {
  return has(key) ? string(key) : fallback;
}
std::string ObjectReader::choice(const std::string& key, const std::vector<std::string>& options) const {
  return as_choice(need(key), path_of(key), options);
}
std::string ObjectReader::choice_or(const std::string& key, const std::string& fallback,
                                    const std::vector<std::string>& options) const {
  return has(key) ? choice(key, options) : fallback;
}
double ObjectReader::bandwidth(const std::string& key) const { return as_bandwidth(need(key), path_of(key)); }
double ObjectReader::bandwidth_or(const std::string& key, double fallback) const {
  return has(key) ? bandwidth(key) : fallback;
}
double ObjectReader::duration(const std::string& key) const { return as_duration(need(key), path_of(key)); }
double ObjectReader::duration_or(const std::string& key, double fallback) const {
  return has(key) ? duration(key) : fallback;
}
double ObjectReader::bytes(const std::string& key) const { return as_bytes(need(key), path_of(key)); }

}  // namespace lowband::scenario_detail
