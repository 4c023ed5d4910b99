// scenario_difference over the resolved JSON: one description of the fields
// (to_json), so a key the run directory records is compared and one it leaves
// out is not.
#include "runtime/scenario/equal.h"

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/scenario/fields.h"
#include "runtime/scenario/load.h"

namespace lowband {
namespace {

using nlohmann::json;

// A section's keys in its field table's order (a method before its parameters,
// as a file lists them); keys of no section (list elements) alphabetically.
std::vector<std::string> ordered_keys(const std::string& path, const json& a, const json& b) {
  std::string section = path;  // a projected scenario's sections are the scenario's
  const std::string inner = "projection.scenario";
  if (section.rfind(inner, 0) == 0) section = section.size() == inner.size() ? "" : section.substr(inner.size() + 1);
  const fields::Section* table = nullptr;
  for (const fields::Section& s : fields::sections())
    if (s.path == section) table = &s;
  const auto rank = [&](const std::string& key) {
    if (!table) return 0;
    const std::vector<std::string> keys = table->keys();
    return int(std::find(keys.begin(), keys.end(), key) - keys.begin());
  };
  std::vector<std::string> keys;
  for (const auto& [key, value] : a.items()) keys.push_back(key);
  for (const auto& [key, value] : b.items())
    if (!a.contains(key)) keys.push_back(key);
  std::stable_sort(keys.begin(), keys.end(), [&](const std::string& x, const std::string& y) {
    const int rx = rank(x), ry = rank(y);
    return rx != ry ? rx < ry : x < y;
  });
  return keys;
}

// A value as the scenario spells it: strings bare ("1ms", "diloco"), the rest as JSON.
std::string spelled(const json* v) {
  if (!v) return "(none)";
  std::string text = v->is_string() ? v->get<std::string>() : v->dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::string join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

// The first difference under `path`; a or b null where one side lacks the key.
std::string first_difference(const std::string& path, const json* a, const json* b) {
  if (a && b && *a == *b) return "";
  if (a && b && a->is_object() && b->is_object()) {
    for (const std::string& key : ordered_keys(path, *a, *b)) {
      const auto ia = a->find(key), ib = b->find(key);
      const std::string d = first_difference(join(path, key), ia == a->end() ? nullptr : &*ia,
                                              ib == b->end() ? nullptr : &*ib);
      if (!d.empty()) return d;
    }
    return "";
  }
  if (a && b && a->is_array() && b->is_array()) {
    if (a->size() != b->size())
      return join(path, "size") + ": " + std::to_string(a->size()) + " vs " + std::to_string(b->size());
    for (size_t i = 0; i < a->size(); ++i) {
      const std::string d = first_difference(join(path, std::to_string(i)), &(*a)[i], &(*b)[i]);
      if (!d.empty()) return d;
    }
    return "";
  }
  // An object on one side only: name its first key, so the line stays short.
  const json* present = a ? a : b;
  if (!(a && b) && present->is_object() && !present->empty()) {
    const std::string key = ordered_keys(path, *present, json::object()).front();
    const json* inner = &present->at(key);
    return first_difference(join(path, key), a ? inner : nullptr, b ? inner : nullptr);
  }
  return path + ": " + spelled(a) + " vs " + spelled(b);
}

// The even split written out: an explicit [2, 2] and none train alike.
void explicit_stages(json& parallel, const ParallelConfig& p, int layers) {
  if (!p.stage_layers.empty() || p.pipeline < 1 || layers % p.pipeline != 0) return;
  parallel["stage_layers"] = std::vector<int>(size_t(p.pipeline), layers / p.pipeline);
}

json training_json(const Scenario& s) {
  json j = canonical_json(s);
  // Under partial participation the network's replay decides who makes each
  // round: there the network decides the training too.
  const bool network_trains = s.parallel.data_sync.partial_participation();
  for (const std::string timing_only : {"name", "description", "network", "projection"})
    if (!(network_trains && timing_only == "network")) j.erase(timing_only);
  return j;
}

}  // namespace

json canonical_json(const Scenario& s) {
  json j = to_json(s);
  explicit_stages(j["parallel"], s.parallel, s.model.layers);
  if (s.projection.scenario) j["projection"]["scenario"] = canonical_json(*s.projection.scenario);
  return j;
}

std::string scenario_difference(const Scenario& a, const Scenario& b) {
  const json ja = canonical_json(a), jb = canonical_json(b);
  return first_difference("", &ja, &jb);
}

std::string training_difference(const Scenario& a, const Scenario& b) {
  const json ja = training_json(a), jb = training_json(b);
  return first_difference("", &ja, &jb);
}

std::string training_key(const Scenario& s) { return training_json(s).dump(); }

}  // namespace lowband
