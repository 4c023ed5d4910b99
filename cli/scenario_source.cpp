#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "common/error.h"
#include "runtime/scenario/load.h"

namespace lowband::cli {

void add_scenario_options(CLI::App* command, ScenarioSource& source) {
  command->add_option("SCENARIO", source.file, "scenario JSON file (default: the built-in \"default\")");
  command->add_option("--builtin", source.builtin,
                      "use a built-in scenario by name (" + [] {
                        std::string names;
                        for (const auto& n : builtin_scenario_names()) names += (names.empty() ? "" : ", ") + n;
                        return names;
                      }() + ")");
  command->add_option("--set", source.sets,
                      "override a key before validation, e.g. --set network.bandwidth=1Gbps (repeatable)");
}

Scenario load_scenario(const ScenarioSource& source) {
  if (!source.file.empty() && !source.builtin.empty())
    throw InputError("--builtin", "give a scenario file or --builtin, not both");
  if (!source.file.empty()) return load_scenario_file(source.file, source.sets);
  if (!source.builtin.empty()) check_builtin_name(source.builtin);
  const std::string name = source.builtin.empty() ? "default" : source.builtin;
  if (source.builtin.empty())
    std::cerr << "lowband: no scenario file given: using the built-in scenario \"default\" ("
              << "scenarios/" << builtin_scenario_file(name) << ")\n";
  return builtin_scenario(name, source.sets);
}

std::string read_scenario_text(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(path, "no such scenario file");
  if (!fs::is_regular_file(path, ec)) throw InputError(path, "not a regular file");
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw InputError(path, "cannot read the file");
  return text.str();
}

ScenarioText scenario_text(const ScenarioSource& source) {
  if (!source.file.empty()) {
    if (!source.builtin.empty()) throw InputError("--builtin", "give a scenario file or --builtin, not both");
    return {read_scenario_text(source.file), source.file};
  }
  if (!source.builtin.empty()) check_builtin_name(source.builtin);
  const std::string name = source.builtin.empty() ? "default" : source.builtin;
  if (source.builtin.empty())
    std::cerr << "lowband: no scenario file given: using the built-in scenario \"default\" (scenarios/"
              << builtin_scenario_file(name) << ")\n";
  return {builtin_scenario_text(name), "builtin:" + name};
}

}  // namespace lowband::cli
