#include "runtime/scenario/grid.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>

#include "common/error.h"
#include "runtime/scenario/equal.h"
#include "runtime/scenario/fields.h"
#include "runtime/scenario/load.h"
#include "runtime/scenario/parse_internal.h"

namespace lowband::grid {
namespace {

using nlohmann::json;

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Short labels for the keys sweeps vary most; others use their last path part.
std::string label_of(const std::string& key) {
  static const std::map<std::string, std::string> known = {
      {"network.bandwidth", "bw"}, {"network.latency", "lat"}, {"compression.ratio", "r"}, {"compression.method", ""}};
  if (const auto it = known.find(key); it != known.end()) return it->second;
  std::string last;
  size_t start = 0;
  while (start <= key.size()) {
    const size_t dot = std::min(key.find('.', start), key.size());
    const std::string part = key.substr(start, dot - start);
    if (!part.empty() && !std::all_of(part.begin(), part.end(), [](unsigned char c) { return std::isdigit(c); }))
      last = part;
    start = dot + 1;
  }
  return last;
}

// A value as it reads in a name: strings bare, the rest as JSON; characters a
// scenario name may not hold become '_' (runs of them one, none at the ends).
std::string name_text(const json& value) {
  const std::string raw = value.is_string() ? value.get<std::string>() : value.dump();
  std::string out;
  for (const char ch : raw) {
    const bool ok = std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.';
    if (ok) out += ch;
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

std::string set_text(const std::string& key, const json& value) { return key + "=" + value.dump(); }

// Everything after "PLACE: " in an InputError's message.
std::string reason_of(const InputError& e) {
  const std::string what = e.what();
  const std::string prefix = e.place().empty() ? "" : e.place() + ": ";
  return what.compare(0, prefix.size(), prefix) == 0 ? what.substr(prefix.size()) : what;
}

std::vector<SweepPoint> cartesian_points(const std::vector<Axis>& axes) {
  std::vector<SweepPoint> points(1);
  for (const Axis& axis : axes) {  // first axis outermost: each later axis multiplies within it
    std::vector<SweepPoint> next;
    for (const SweepPoint& p : points)
      for (const json& v : axis.values) {
        SweepPoint q = p;
        q.settings.emplace_back(axis.key, v);
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  return points;
}

// Names: base + "-" + label+value per axis; duplicates (values that read alike)
// get their 1-based point number appended so every run directory differs.
void name_points(std::vector<SweepPoint>& points, const std::string& base_name) {
  for (SweepPoint& p : points) {
    p.name = base_name;
    for (const auto& [key, value] : p.settings) {
      // "bw300Mbps", "r0.965"; a value starting with a letter gets a '_': "tokenizer_gpt2".
      const std::string label = label_of(key), text = name_text(value);
      const bool joined = !label.empty() && !text.empty() && std::isalpha(static_cast<unsigned char>(text[0]));
      p.name += "-" + label + (joined ? "_" : "") + text;
    }
  }
  std::map<std::string, int> count;
  for (const SweepPoint& p : points) ++count[p.name];
  for (size_t i = 0; i < points.size(); ++i)
    if (count[points[i].name] > 1) points[i].name += "-p" + std::to_string(i + 1);
}

// Points that train alike (training_key: all but name, description, network and
// projection), in order of their first point; linear in the points.
std::vector<std::vector<size_t>> group_points(const std::vector<SweepPoint>& points) {
  std::vector<std::vector<size_t>> groups;
  std::unordered_map<std::string, size_t> group_of_key;
  for (size_t i = 0; i < points.size(); ++i) {
    const auto [it, fresh] = group_of_key.emplace(training_key(points[i].scenario), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

// An axis that sets a section's choice (compression.method, network.topology,
// parallel.data_sync.method) drops, at each point, the keys of that section in
// the base document that apply only with its other values (compression.k_ratio
// where method is "none"): the file's settings for another method, left out as a
// file written for that point would leave them. Keys a --set gives are kept (and
// refused as before where they do not apply).
void drop_keys_for_other_choices(json& doc, const std::vector<std::pair<std::string, json>>& settings,
                                 const std::vector<std::string>& sets) {
  std::vector<std::string> set_keys;
  for (const std::string& set : sets) set_keys.push_back(set.substr(0, set.find('=')));
  for (const auto& [key, value] : settings) {
    const size_t dot = key.rfind('.');
    if (dot == std::string::npos || !value.is_string()) continue;
    const std::string path = key.substr(0, dot), choice = key.substr(dot + 1), chosen = value.get<std::string>();
    const auto& all = fields::sections();
    const auto section = std::find_if(all.begin(), all.end(), [&](const fields::Section& s) { return s.path == path; });
    if (section == all.end()) continue;
    json* at = &doc;  // the section's object in the document, if any
    for (size_t start = 0; at && start <= path.size();) {
      const size_t end = std::min(path.find('.', start), path.size());
      const std::string part = path.substr(start, end - start);
      at = at->is_object() && at->contains(part) ? &(*at)[part] : nullptr;
      start = end + 1;
    }
    if (!at || !at->is_object()) continue;
    for (const fields::Field& f : section->fields) {
      const std::vector<std::string>& values = f.applies.values;
      if (f.applies.key != choice || std::find(values.begin(), values.end(), chosen) != values.end()) continue;
      if (std::find(set_keys.begin(), set_keys.end(), path + "." + f.key) != set_keys.end()) continue;
      at->erase(f.key);
    }
  }
}

}  // namespace

std::vector<std::string> split_top_level(const std::string& text) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char ch : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (ch == '\\') escaped = true;
      else if (ch == '"') in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      ++depth;
    } else if (ch == ']' || ch == '}') {
      depth = std::max(0, depth - 1);
    } else if (ch == ',' && depth == 0) {
      parts.push_back(trim(current));
      current.clear();
      continue;
    }
    current += ch;
  }
  parts.push_back(trim(current));
  return parts;
}

json parse_set_value(const std::string& text, const std::string& place, const std::string& key) {
  const std::optional<json> value =
      scenario_detail::parse_json_limited(text, "", place, /*syntax_errors_throw=*/false, {}, key);
  return value ? *value : json(text);
}

SweepSpec make_spec(const std::string& text, const std::string& source, const std::vector<std::string>& sets) {
  SweepSpec spec;
  spec.source = source;
  spec.base = scenario_detail::parse_json_text(text, source);  // syntax errors with line and column
  scenario_detail::include_network_file(spec.base, source, source);
  if (spec.base.is_object() && spec.base.contains("sweep")) {
    // Read again keeping key order: the section's keys are the axes, in file order.
    const auto section = nlohmann::ordered_json::parse(text).at("sweep");
    if (!section.is_object())
      throw InputError(source, "sweep: expected an object of \"dotted.key\": [value, ...], e.g. "
                               "{\"network.bandwidth\": [\"80Mbps\", \"1Gbps\"]}");
    for (const auto& [key, values] : section.items()) {
      const std::string place = source + ": sweep." + key;
      if (!values.is_array() || values.empty()) throw InputError(place, "expected a non-empty array of values");
      Axis axis{key, {}, place};
      for (const auto& v : values) axis.values.push_back(json::parse(v.dump()));
      spec.axes.push_back(std::move(axis));
    }
    spec.base.erase("sweep");
  }
  std::vector<std::string> set_axis_keys, plain_keys;
  for (const std::string& set : sets) {
    const std::string flag = "--set " + set;
    scenario_detail::require_utf8(set, "--set");  // points are named and recorded as JSON
    const size_t eq = set.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError(flag, "expected PATH=VALUE, e.g. network.bandwidth=1Gbps");
    const std::string key = set.substr(0, eq);
    const std::vector<std::string> items = split_top_level(set.substr(eq + 1));
    const auto given = [&](const std::vector<std::string>& keys) {
      return std::find(keys.begin(), keys.end(), key) != keys.end();
    };
    if (given(set_axis_keys) || (items.size() > 1 && given(plain_keys)))
      throw InputError(flag, key + " is given by more than one --set");
    const auto section_axis =
        std::find_if(spec.axes.begin(), spec.axes.end(), [&](const Axis& a) { return a.key == key; });
    if (items.size() == 1) {  // a plain override; it fixes a section axis of the same key
      if (section_axis != spec.axes.end()) spec.axes.erase(section_axis);
      spec.sets.push_back(set);
      plain_keys.push_back(key);
      continue;
    }
    if (key == "name") throw InputError(flag, "the name cannot be swept: each point is named NAME-<its values>");
    Axis axis{key, {}, flag};
    for (const std::string& item : items) {
      if (item.empty()) throw InputError(flag, "empty value in the list (values are separated by commas)");
      axis.values.push_back(parse_set_value(item, flag, key));
    }
    set_axis_keys.push_back(key);
    if (section_axis != spec.axes.end()) *section_axis = std::move(axis);
    else spec.axes.push_back(std::move(axis));
  }
  for (const Axis& axis : spec.axes)
    if (axis.key == "name" || axis.key.find('=') != std::string::npos || axis.key.empty())
      throw InputError(axis.place, "not a key a sweep can vary (the name is NAME-<values>; keys hold no '=')");
  return spec;
}

void add_seed_axis(SweepSpec& spec, int seeds) {
  if (seeds < 1 || seeds > kMaxSeeds)
    throw InputError("--seeds", "must be 1.." + std::to_string(kMaxSeeds) + ", got " + std::to_string(seeds));
  for (const Axis& axis : spec.axes)
    if (axis.key == "training.seed")
      throw InputError("--seeds", "training.seed is already an axis (" + axis.place + "): give one or the other");
  json base = spec.base;
  apply_overrides(base, spec.sets);
  const uint64_t first = scenario_detail::parse_with_overrides(base, spec.source, spec.sets).training.seed;
  Axis axis{"training.seed", {}, "--seeds " + std::to_string(seeds)};
  for (int k = 0; k < seeds; ++k) axis.values.push_back(first + uint64_t(k));
  spec.axes.push_back(std::move(axis));
}

SweepPlan plan_sweep(const SweepSpec& spec) {
  SweepPlan plan;
  plan.spec = spec;
  json base = spec.base;
  apply_overrides(base, spec.sets);  // path errors name the plain --set
  plan.base_name = base.is_object() && base.contains("name") && base["name"].is_string()
                      ? base["name"].get<std::string>()
                      : "sweep";
  int64_t count = 1;
  for (const Axis& axis : spec.axes) {
    count *= int64_t(axis.values.size());
    if (count > kMaxSweepPoints)
      throw InputError(axis.place, "the grid has more than " + std::to_string(kMaxSweepPoints) +
                                       " points with this axis (each axis multiplies the points): split it into sweeps");
  }
  plan.points = cartesian_points(spec.axes);
  name_points(plan.points, plan.base_name);
  for (SweepPoint& p : plan.points) {
    std::vector<std::string> point_sets, all_sets = spec.sets;
    for (const auto& [key, value] : p.settings) point_sets.push_back(set_text(key, value));
    all_sets.insert(all_sets.end(), point_sets.begin(), point_sets.end());
    const std::string at_point = " at point " + p.name + (p.settings.empty() ? "" : " (" + describe_settings(p.settings) + ")");
    try {
      json doc = base;
      drop_keys_for_other_choices(doc, p.settings, all_sets);
      apply_overrides(doc, point_sets);
      if (doc.is_object() && doc.contains("name") && doc["name"].is_string()) doc["name"] = p.name;
      p.scenario = scenario_detail::parse_with_overrides(doc, spec.source, all_sets);
    } catch (const InputError& e) {
      // Blame the axis (its flag or sweep path) when one of the point's values is at fault.
      std::string place = e.place();
      for (size_t i = 0; i < point_sets.size(); ++i)
        if (e.place() == "--set " + point_sets[i]) place = spec.axes[i].place;
      throw InputError(place + at_point, reason_of(e));
    }
  }
  plan.groups = group_points(plan.points);
  return plan;
}

nlohmann::ordered_json sweep_document(const SweepSpec& spec) {
  json base = spec.base;
  apply_overrides(base, spec.sets);
  auto doc = nlohmann::ordered_json::parse(base.dump());
  auto section = nlohmann::ordered_json::object();
  for (const Axis& axis : spec.axes) section[axis.key] = nlohmann::ordered_json::parse(json(axis.values).dump());
  doc["sweep"] = section;
  return doc;
}

std::string describe_settings(const std::vector<std::pair<std::string, json>>& settings) {
  std::string out;
  for (const auto& [key, value] : settings)
    out += (out.empty() ? "" : ", ") + key + "=" +
           (value.is_string() && !value.get<std::string>().empty() ? value.get<std::string>() : value.dump());
  return out;
}

}  // namespace lowband::grid
