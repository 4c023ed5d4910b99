#pragma once
// A test's scratch directory under the system temp dir, unique to the process.
// A name made of the test's name alone is not enough: two processes running the
// same test at once (ctest in two build directories on one machine, two loops of
// one binary) would share it, and one's SetUp/TearDown would delete the other's
// files mid-run, a failure that passes on rerun.
#include <stdlib.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace lowband::test_support {

// A new, empty directory <temp>/<prefix>_XXXXXX (mkdtemp); the caller removes it.
inline std::filesystem::path unique_temp_dir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  return pattern;
}

// The same, named after the running GoogleTest test (suite and name).
inline std::filesystem::path unique_test_temp_dir(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = prefix + "_" + info->test_suite_name() + "_" + info->name();
  for (char& c : name)
    if (c == '/') c = '_';  // parameterised suites and tests: "Ranks/EqualsSingleDevice", ".../zigzag_P8"
  return unique_temp_dir(name);
}

}  // namespace lowband::test_support
