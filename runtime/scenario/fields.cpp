// The field tables' shared parts: the builders' spellings, the registry of
// sections, and the generic read and write.
#include "runtime/scenario/fields.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "runtime/scenario/fields_build.h"

namespace lowband::fields {
namespace build {
namespace {

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string integer_type(int64_t lo, int64_t hi) {
  // The parser's caps (scenario_detail::kMaxInt, kMaxNodes) are limits, not ranges a reader needs.
  if (hi >= int64_t{1} << 16) return "integer ≥ " + std::to_string(lo);
  return "integer " + std::to_string(lo) + ".." + std::to_string(hi);
}

std::string number_type(const Bounds& b) {
  const bool has_lo = std::isfinite(b.lo), has_hi = std::isfinite(b.hi);
  if (has_lo && has_hi)
    return std::string("number in ") + (b.lo_open ? "(" : "[") + number_text(b.lo) + ", " + number_text(b.hi) +
           (b.hi_open ? ")" : "]");
  if (has_lo) return std::string("number ") + (b.lo_open ? "> " : "≥ ") + number_text(b.lo);
  return "number";
}

std::string quoted(const std::string& s) { return "`\"" + s + "\"`"; }

std::string choice_type(const std::vector<std::string>& choices) {
  std::string out;
  for (const auto& c : choices) out += (out.empty() ? "" : " \\| ") + quoted(c);
  return out;
}

Field doc_only(std::string key, Kind kind, std::string type, Doc d) {
  Field f;
  f.key = std::move(key);
  f.kind = kind;
  f.type = std::move(type);
  f.unit = std::move(d.unit);
  f.default_text = std::move(d.default_text);
  f.applies = std::move(d.applies);
  f.doc = std::move(d.doc);
  f.example = std::move(d.example);
  return f;
}

}  // namespace build

std::vector<std::string> Section::keys() const {
  std::vector<std::string> out;
  for (const Field& f : fields) out.push_back(f.key);
  return out;
}

const Field& Section::field(const std::string& key) const {
  for (const Field& f : fields)
    if (f.key == key) return f;
  throw std::logic_error("no field " + key + " in section " + path);
}

const std::vector<Section>& sections() {
  static const std::vector<Section> all = {top_level_section(), model_section(),       parallel_section(),
                                           data_sync_section(), compression_section(), boundary_section(),
                                           network_section(),   devices_section(),     training_section(),
                                           projection_section()};
  return all;
}

const Section& section(const std::string& path) {
  for (const Section& s : sections())
    if (s.path == path) return s;
  throw std::logic_error("no scenario section " + path);
}

namespace {

// Whether `f` applies given the section's values read or written so far.
bool applies(const Field& f, const nlohmann::json& section_values) {
  if (f.applies.key.empty()) return true;
  const auto it = section_values.find(f.applies.key);
  if (it == section_values.end() || !it->is_string()) return false;
  return std::find(f.applies.values.begin(), f.applies.values.end(), it->get<std::string>()) != f.applies.values.end();
}

}  // namespace

void read_generic(const Section& section, const scenario_detail::ObjectReader& r, Scenario& s) {
  nlohmann::json so_far = nlohmann::json::object();
  for (const Field& f : section.fields) {
    if (!f.read) continue;
    if (!f.applies.key.empty()) {
      scenario_detail::only_with(r, f.key, so_far.value(f.applies.key, std::string()), f.applies.values,
                                 f.applies.key);
      if (!applies(f, so_far)) continue;
    }
    f.read(r, s);
    if (f.write) so_far[f.key] = f.write(s);
  }
}

void write_generic(const Section& section, const Scenario& s, nlohmann::json& out) {
  for (const Field& f : section.fields)
    if (f.write && applies(f, out) && (!f.written || f.written(s))) out[f.key] = f.write(s);
}

}  // namespace lowband::fields
