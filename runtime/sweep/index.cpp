#include "runtime/sweep/index.h"

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "common/error.h"
#include "runtime/scenario/equal.h"
#include "runtime/scenario/load.h"

namespace lowband::sweep {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

// The JSON document at `path`, or null when it is missing or unreadable.
json read_json_or_null(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? json(nullptr) : j;
}

bool finished_run(const fs::path& run_dir, const Scenario& expected) {
  json scenario = read_json_or_null(run_dir / "scenario.json");
  const json summary = read_json_or_null(run_dir / "summary.json");
  if (!scenario.is_object() || !summary.is_object()) return false;
  upgrade_recorded_scenario(scenario);  // as it ran (an older mos run: owner_kv exact)
  try {
    if (!scenario_difference(parse_scenario(scenario, (run_dir / "scenario.json").string()), expected).empty())
      return false;
  } catch (const InputError&) {
    return false;  // written by another version of lowband: run it again
  }
  return !summary.value("diverged", true) && summary.value("steps_done", -1) == summary.value("steps_planned", -2);
}

std::string fixed(double x, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << x;
  return out.str();
}

}  // namespace

std::string to_string(PointStatus status) {
  return status == PointStatus::done ? "done" : status == PointStatus::failed ? "failed" : "pending";
}

ordered_json index_json(const grid::SweepPlan& plan, const std::vector<PointState>& states) {
  ordered_json axes = ordered_json::object(), keys = ordered_json::array();
  for (const grid::Axis& axis : plan.spec.axes) {
    keys.push_back(axis.key);
    axes[axis.key] = ordered_json::parse(json(axis.values).dump());
  }
  std::vector<int> group_of(plan.points.size(), 0);
  for (size_t g = 0; g < plan.groups.size(); ++g)
    for (size_t i : plan.groups[g]) group_of[i] = int(g) + 1;
  ordered_json points = ordered_json::array();
  for (size_t i = 0; i < plan.points.size(); ++i) {
    ordered_json settings = ordered_json::object();
    for (const auto& [key, value] : plan.points[i].settings) settings[key] = ordered_json::parse(value.dump());
    points.push_back({{"run_dir", plan.points[i].name},
                      {"settings", settings},
                      {"status", to_string(states[i].status)},
                      {"trained_in", states[i].trained_in},
                      {"message", states[i].message},
                      {"group", group_of[i]}});
  }
  return {{"sweep", plan.base_name}, {"source", plan.spec.source}, {"axis_keys", keys},
          {"axes", axes},       {"trainings", plan.groups.size()}, {"points", points}};
}

std::vector<PointState> previous_states(const grid::SweepPlan& plan, const std::string& sweep_dir, bool keep_failed) {
  std::vector<PointState> states(plan.points.size());
  const json old = read_json_or_null(fs::path(sweep_dir) / "index.json");
  if (!old.is_object() || !old.contains("points") || !old["points"].is_array()) return states;
  for (const json& p : old["points"]) {
    if (!p.is_object()) continue;
    const std::string status = p.value("status", ""), run_dir = p.value("run_dir", "");
    for (size_t i = 0; i < plan.points.size(); ++i) {
      if (plan.points[i].name != run_dir) continue;
      if (status == "done" && finished_run(fs::path(sweep_dir) / run_dir, plan.points[i].scenario))
        states[i] = {PointStatus::done, p.value("trained_in", run_dir), ""};
      else if (status == "failed" && keep_failed)
        states[i] = {PointStatus::failed, p.value("trained_in", run_dir), p.value("message", "")};
    }
  }
  return states;
}

std::string summary_table(const grid::SweepPlan& plan, const std::vector<PointState>& states, const std::string& sweep_dir) {
  std::ostringstream out;
  out << "| point | status | trained in | sim tokens/s | sim time (s) | final val loss |\n"
      << "|---|---|---|---:|---:|---:|\n";
  std::string failures;
  for (size_t i = 0; i < plan.points.size(); ++i) {
    const std::string& name = plan.points[i].name;
    const json s = read_json_or_null(fs::path(sweep_dir) / name / "summary.json");
    const auto number = [&](const char* key, int digits) {
      return s.is_object() && s.contains(key) && s[key].is_number() ? fixed(s[key].get<double>(), digits) : "-";
    };
    out << "| " << name << " | " << to_string(states[i].status) << " | "
        << (states[i].trained_in == name ? "itself" : states[i].trained_in) << " | " << number("sim_tokens_per_s", 1)
        << " | " << number("sim_total_seconds", 3) << " | " << number("final_val_loss", 4) << " |\n";
    if (states[i].status == PointStatus::failed) failures += "- " + name + ": " + states[i].message + "\n";
  }
  if (!failures.empty()) out << "\nfailed:\n" << failures;
  return out.str();
}

}  // namespace lowband::sweep
