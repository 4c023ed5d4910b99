// README tables and JSON Schema from the field tables.
#include "runtime/scenario/field_docs.h"

#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

namespace lowband::fields {
namespace {

using nlohmann::ordered_json;

// "*method diloco, sparseloco*: " where a key applies only sometimes.
std::string applies_prefix(const Field& f) {
  if (f.applies.key.empty()) return "";
  std::string values;
  for (const auto& v : f.applies.values) values += (values.empty() ? "" : ", ") + v;
  return "*" + f.applies.key + " " + values + "*: ";
}

std::string describe(const Field& f) { return applies_prefix(f) + f.doc; }

const Section* section_at(const std::string& path) {
  for (const Section& s : sections())
    if (s.path == path) return &s;
  return nullptr;
}

std::string child_path(const Section& s, const Field& f) { return s.path.empty() ? f.key : s.path + "." + f.key; }

// Quantities are strings of a number and a unit (runtime/scenario/units.cpp).
std::string quantity_pattern(const std::string& units) {
  return "^\\s*[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?\\s*(" + units + ")\\s*$";
}

void add_bounds(const Field& f, ordered_json& j) {
  if (f.lo > -1e300) j[f.lo_open ? "exclusiveMinimum" : "minimum"] = f.kind == Kind::integer ? ordered_json(int64_t(f.lo))
                                                                                               : ordered_json(f.lo);
  if (f.hi < 1e18) j[f.hi_open ? "exclusiveMaximum" : "maximum"] = f.kind == Kind::integer ? ordered_json(int64_t(f.hi))
                                                                                           : ordered_json(f.hi);
}

ordered_json value_schema(const Section& s, const Field& f) {
  if (const Section* inner = section_at(child_path(s, f))) return {{"$ref", "#/$defs/" + inner->path}};
  if (child_path(s, f) == "projection.scenario")  // a built-in's name or a scenario inline
    return {{"anyOf", {{{"type", "string"}}, {{"$ref", "#"}}}}};
  ordered_json j = ordered_json::object();
  switch (f.kind) {
    case Kind::integer: j["type"] = "integer"; add_bounds(f, j); break;
    case Kind::number: j["type"] = "number"; add_bounds(f, j); break;
    case Kind::boolean: j["type"] = "boolean"; break;
    case Kind::string: j["type"] = "string"; break;
    case Kind::choice: j["enum"] = f.choices; break;
    case Kind::bandwidth:
      j["type"] = "string";
      j["pattern"] = quantity_pattern("bps|Kbps|Mbps|Gbps|Tbps|Bps|KBps|MBps|GBps|TBps|KiBps|MiBps|GiBps");
      break;
    case Kind::duration: j["type"] = "string", j["pattern"] = quantity_pattern("h|min|s|ms|us|ns"); break;
    case Kind::size: j["type"] = "string", j["pattern"] = quantity_pattern("B|KB|MB|GB|KiB|MiB|GiB|TiB"); break;
    case Kind::array: j["type"] = "array"; break;
    case Kind::object: j["type"] = "object"; break;
  }
  return j;
}

ordered_json section_schema(const Section& s) {
  ordered_json properties = ordered_json::object(), required = ordered_json::array();
  for (const Field& f : s.fields) {
    ordered_json p = value_schema(s, f);
    std::string text = describe(f);
    for (size_t at = text.find("\\|"); at != std::string::npos; at = text.find("\\|", at)) text.erase(at, 1);
    if (!text.empty()) p["description"] = text;
    // A default written as one JSON value (`2`, `"1f1b"`) is the editor's default too.
    const std::string& d = f.default_text;
    if (d.size() > 2 && d.front() == '`' && d.back() == '`' && d.find('`', 1) == d.size() - 1) {
      const ordered_json value = ordered_json::parse(d.substr(1, d.size() - 2), nullptr, false);
      if (!value.is_discarded()) p["default"] = value;
    }
    properties[f.key] = p;
    if (f.required() && f.applies.key.empty()) required.push_back(f.key);
  }
  ordered_json j = {{"type", "object"}, {"additionalProperties", false}};
  if (!required.empty()) j["required"] = required;
  j["properties"] = properties;
  return j;
}

}  // namespace

std::string readme_table(const Section& section) {
  std::ostringstream out;
  out << "| key | type | default | |\n|---|---|---|---|\n";
  for (const Field& f : section.fields)
    out << "| `" << f.key << "` | " << f.type << (f.unit.empty() ? "" : ", " + f.unit) << " | " << f.default_text
        << " | " << describe(f) << " |\n";
  return out.str();
}

std::string with_generated_tables(const std::string& readme) {
  const std::string open = "<!-- fields: ", close = "<!-- /fields -->";
  std::istringstream in(readme);
  std::ostringstream out;
  bool inside = false;
  std::set<std::string> seen;  // sections with a table
  for (std::string line; std::getline(in, line);) {
    if (inside) {
      if (line != close) continue;
      inside = false;
    } else if (line.rfind(open, 0) == 0) {
      const size_t end = line.find(" -->");
      if (end == std::string::npos) throw std::invalid_argument("README: unclosed marker " + line);
      const Section* s = section_at(line.substr(open.size(), end - open.size()));
      if (!s) throw std::invalid_argument("README: no scenario section in " + line);
      seen.insert(s->path);
      out << line << "\n" << readme_table(*s);
      inside = true;
      continue;
    }
    out << line << "\n";
  }
  if (inside) throw std::invalid_argument("README: a \"" + open + "\" block has no \"" + close + "\"");
  // Every section has its table: a README without the markers is not "up to date".
  for (const Section& sec : sections())
    if (!seen.count(sec.path))
      throw std::invalid_argument("README: no key table for section \"" + (sec.path.empty() ? "(top level)" : sec.path) +
                                  "\" (a line \"" + open + sec.path + " -->\" then \"" + close + "\")");
  return out.str();
}

ordered_json json_schema() {
  ordered_json schema = {
      {"$schema", "https://json-schema.org/draft/2020-12/schema"},
      {"title", "lowband scenario"},
      {"description", "One lowband experiment. Generated by `lowband scenario-docs --write` from the field tables "
                      "(runtime/scenario/fields_*.cpp); scenarios/README.md documents every key. lowband itself "
                      "checks more (units, cross-section constraints) and names the JSON path of what it refuses."}};
  const ordered_json root = section_schema(section(""));
  for (const auto& [key, value] : root.items()) schema[key] = value;
  ordered_json defs = ordered_json::object();
  for (const Section& s : sections())
    if (!s.path.empty()) defs[s.path] = section_schema(s);
  schema["$defs"] = defs;
  return schema;
}

std::string json_schema_text() { return json_schema().dump(2) + "\n"; }

}  // namespace lowband::fields
