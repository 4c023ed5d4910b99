#include "runtime/report/seed_groups.h"

#include <algorithm>
#include <set>

namespace lowband::report {
namespace {

constexpr const char* kSeedKey = "training.seed";

// What two runs of one arm share: scenario.json less its name, description and seed.
std::string arm_key(const LoadedRun& run) {
  nlohmann::json s = run.scenario;
  if (!s.is_object()) return s.dump();
  s.erase("name");
  s.erase("description");
  if (s.contains("training") && s["training"].is_object()) s["training"].erase("seed");
  return s.dump();
}

std::string group_label(const LoadedRun& run) {
  if (!run.sweep_settings.is_object() || !run.sweep_settings.contains(kSeedKey)) return run.label;
  std::string settings;
  for (const auto& [key, value] : run.sweep_settings.items()) {
    if (key == kSeedKey) continue;
    settings += (settings.empty() ? "" : ", ") + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return settings.empty() ? run.sweep : run.sweep + " (" + settings + ")";
}

}  // namespace

std::optional<int64_t> run_seed(const LoadedRun& run) {
  const nlohmann::json& s = run.scenario;
  if (!s.is_object() || !s.contains("training") || !s["training"].is_object()) return std::nullopt;
  const nlohmann::json& t = s["training"];
  if (!t.contains("seed") || !t["seed"].is_number_integer()) return std::nullopt;
  return t["seed"].get<int64_t>();
}

std::vector<SeedGroup> group_by_seed(const std::vector<LoadedRun>& runs) {
  std::vector<SeedGroup> groups;
  std::vector<std::string> keys;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string key = arm_key(runs[i]);
    const int64_t seed = run_seed(runs[i]).value_or(-1);
    auto same_arm = [&](size_t g) {
      return keys[g] == key && std::find(groups[g].seeds.begin(), groups[g].seeds.end(), seed) == groups[g].seeds.end();
    };
    size_t g = 0;
    while (g < groups.size() && !same_arm(g)) ++g;
    if (g == groups.size()) {
      groups.push_back({group_label(runs[i]), {}, {}});
      keys.push_back(key);
    }
    groups[g].runs.push_back(i);
    groups[g].seeds.push_back(seed);
  }
  // Outside a sweep, several seeds of one arm are named by their scenario name
  // (each run's own label carries its directory, assign_labels).
  for (SeedGroup& g : groups)
    if (g.runs.size() > 1 && !runs[g.runs.front()].sweep_settings.contains(kSeedKey)) g.label = runs[g.runs.front()].name;
  std::set<std::string> taken;
  for (SeedGroup& g : groups) {
    const std::string base = g.label;
    for (int n = 2; taken.count(g.label); ++n) g.label = base + " #" + std::to_string(n);
    taken.insert(g.label);
  }
  return groups;
}

}  // namespace lowband::report
