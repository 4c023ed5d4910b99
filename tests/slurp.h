#pragma once
// A whole file as a string ("" when it cannot be read): for tests that check
// what a command or a run wrote.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace lowband::test_support {

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace lowband::test_support
