// `lowband scenario-docs`: the committed key tables and schema are current
// (exit 0); a stale copy is named (exit 1) and --write regenerates it.
#include <gtest/gtest.h>

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

}  // namespace
