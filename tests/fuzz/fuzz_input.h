#pragma once
// The input format of the scenario-text fuzz targets: a scenario file's text,
// then optionally a NUL byte and one --set value per line.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace lowband::fuzz {

struct ScenarioInput {
  std::string text;
  std::vector<std::string> sets;
};

inline ScenarioInput scenario_input(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  ScenarioInput out{input.substr(0, nul), {}};
  if (nul != std::string::npos) {
    std::istringstream lines(input.substr(nul + 1));
    for (std::string line; std::getline(lines, line);) out.sets.push_back(line);
  }
  return out;
}

}  // namespace lowband::fuzz
