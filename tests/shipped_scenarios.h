#pragma once
// The scenarios shipped under scenarios/ (recursively, sorted), as paths relative to
// it: every *.json but the schema and the measured networks (scenarios/networks/:
// network sections a scenario names with "network": "PATH", not scenarios).
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace lowband::test_support {

inline const std::string& scenarios_dir() {
  static const std::string dir = std::string(LOWBAND_SOURCE_DIR) + "/scenarios";
  return dir;
}

inline std::vector<std::string> shipped_scenarios() {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(scenarios_dir())) {
    const std::string rel = fs::relative(entry.path(), scenarios_dir()).generic_string();
    if (entry.path().extension() == ".json" && rel.find(".schema.") == std::string::npos &&
        rel.rfind("networks/", 0) != 0)
      out.push_back(rel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace lowband::test_support
