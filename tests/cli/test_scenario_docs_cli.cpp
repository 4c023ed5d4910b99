// `lowband scenario-docs`: the committed key tables and schema are current
// (exit 0); a stale copy is named (exit 1) and --write regenerates it; a README
// without the tables, or a directory or fifo in a file's place, is bad input
// (exit 2, one line naming it, nothing written).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "tests/cli/cli_support.h"

namespace {

using lowband::test_support::Cli;
using lowband::test_support::slurp;

const std::string kScenarios = std::string(LOWBAND_SOURCE_DIR) + "/scenarios/";

TEST_F(Cli, ScenarioDocsAreCurrent) {
  const auto r = run("scenario-docs");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("up to date"), std::string::npos) << r.out;
}

TEST_F(Cli, ScenarioDocsNameAStaleFileAndRewriteIt) {
  fs::create_directories(dir_ / "scenarios");
  fs::create_directories(dir_ / "docs");
  const std::string readme = slurp(kScenarios + "README.md");
  std::string stale = readme;
  const std::string row = "| `steps` | integer ≥ 1 | `100` | optimiser steps |";
  ASSERT_NE(stale.find(row), std::string::npos);
  stale.replace(stale.find(row), row.size(), "| `steps` | integer ≥ 1 | `200` | optimiser steps |");
  write("scenarios/README.md", stale);
  write("docs/scenario.schema.json", slurp(kScenarios + "../docs/scenario.schema.json"));
  const auto r = run("scenario-docs --root " + dir_.string());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("README.md"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("scenario.schema.json"), std::string::npos) << r.err;
  EXPECT_EQ(run("scenario-docs --write --root " + dir_.string()).exit_code, 0);
  EXPECT_EQ(slurp(dir_ / "scenarios" / "README.md"), readme);
}

TEST_F(Cli, ScenarioDocsRefuseWhatTheyCannotCheck) {
  namespace fs = std::filesystem;
  fs::create_directories(dir_ / "scenarios");
  fs::create_directories(dir_ / "docs");
  const std::string schema = slurp(kScenarios + "../docs/scenario.schema.json");
  write("docs/scenario.schema.json", schema);
  write("scenarios/README.md", "# scenarios\n\nno tables here\n");  // nothing to compare: not "up to date"
  for (const char* flags : {"", " --write"}) {
    const auto r = run(std::string("scenario-docs") + flags + " --root " + dir_.string());
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("README.md: README: no key table for section"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(dir_ / "scenarios" / "README.md"), "# scenarios\n\nno tables here\n");
  }
  write("scenarios/README.md", slurp(kScenarios + "README.md"));
  fs::remove(dir_ / "docs" / "scenario.schema.json");
  fs::create_directories(dir_ / "docs" / "scenario.schema.json");  // a directory in the schema's place
  for (const char* flags : {"", " --write"}) {
    const auto r = run(std::string("scenario-docs") + flags + " --root " + dir_.string());
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("scenario.schema.json: not a regular file"), std::string::npos) << r.err;
  }
  fs::remove(dir_ / "docs" / "scenario.schema.json");
  ASSERT_EQ(::mkfifo((dir_ / "docs" / "scenario.schema.json").c_str(), 0600), 0);  // would block a read
  const auto r = run("scenario-docs --root " + dir_.string());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "docs"))  // no temporary file left
    EXPECT_FALSE(entry.is_regular_file()) << entry.path();
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "scenarios"))
    EXPECT_EQ(entry.path().filename(), "README.md") << entry.path();
}

}  // namespace
