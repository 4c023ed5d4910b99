// The field tables (runtime/scenario/fields.h) against what is derived from
// them: every key, changed in turn, is parsed, written by to_json, named by
// scenario_difference and restored by parse ∘ to_json; to_json writes no key
// the tables lack; the generated README tables and JSON Schema are current.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "runtime/scenario/equal.h"
#include "runtime/scenario/field_docs.h"
#include "runtime/scenario/fields.h"
#include "runtime/scenario/load.h"
#include "tests/shipped_scenarios.h"
#include "tests/slurp.h"

namespace lowband::test {
namespace {

using test_support::slurp;

const std::string kRoot = LOWBAND_SOURCE_DIR;

std::string path_of(const fields::Section& s, const fields::Field& f) {
  return s.path.empty() ? f.key : s.path + "." + f.key;
}

bool names(const std::string& difference, const std::string& path) {
  return difference.rfind(path + ":", 0) == 0 || difference.rfind(path + ".", 0) == 0;
}

TEST(ScenarioFields, EveryFieldIsComparedAndRoundTrips) {
  int tested = 0;
  for (const fields::Section& section : fields::sections())
    for (const fields::Field& f : section.fields) {
      if (f.example.empty()) continue;  // a section of its own, or never written (compression.ratio)
      const std::string path = path_of(section, f);
      SCOPED_TRACE(path + "=" + f.example);
      std::vector<std::string> sets = section.setup;
      sets.insert(sets.end(), f.example_sets.begin(), f.example_sets.end());
      if (!f.applies.key.empty())
        sets.push_back((section.path.empty() ? "" : section.path + ".") + f.applies.key + "=" + f.applies.values[0]);
      if (!f.example_from.empty()) sets.push_back(path + "=" + f.example_from);
      Scenario base, changed;
      ASSERT_NO_THROW(base = builtin_scenario("default", sets));
      sets.push_back(path + "=" + f.example);
      ASSERT_NO_THROW(changed = builtin_scenario("default", sets));
      const std::string difference = scenario_difference(base, changed);
      EXPECT_TRUE(names(difference, path)) << "the difference names " << difference;
      const Scenario back = parse_scenario(to_json(changed), "resolved");
      EXPECT_EQ(scenario_difference(back, changed), "");
      EXPECT_TRUE(names(scenario_difference(base, back), path)) << "the round trip keeps the change";
      ++tested;
    }
  EXPECT_GE(tested, 80);
}

// Each section's keys in the resolved form of every shipped scenario are the table's.
void expect_known(const nlohmann::json& j, const std::string& path) {
  const fields::Section* table = nullptr;
  for (const fields::Section& s : fields::sections())
    if (s.path == path) table = &s;
  if (!table || !j.is_object()) return;
  const std::vector<std::string> keys = table->keys();
  for (const auto& [key, value] : j.items()) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), key), keys.end()) << (path.empty() ? key : path + "." + key);
    expect_known(value, path.empty() ? key : path + "." + key);
  }
}

TEST(ScenarioFields, ToJsonWritesOnlyTheTablesKeys) {
  for (const std::string& rel : test_support::shipped_scenarios()) {
    SCOPED_TRACE(rel);
    expect_known(to_json(load_scenario_file(test_support::scenarios_dir() + "/" + rel)), "");
  }
}

TEST(ScenarioFields, GeneratedDocsAreCurrent) {
  const std::string readme = slurp(kRoot + "/scenarios/README.md");
  EXPECT_TRUE(fields::with_generated_tables(readme) == readme)
      << "scenarios/README.md's key tables are stale: run build/lowband scenario-docs --write";
  EXPECT_TRUE(fields::json_schema_text() == slurp(kRoot + "/docs/scenario.schema.json"))
      << "docs/scenario.schema.json is stale: run build/lowband scenario-docs --write";
}

// A generated table says what the table says: a key, its type, default and where it applies.
TEST(ScenarioFields, ReadmeRowsComeFromTheTable) {
  const std::string table = fields::readme_table(fields::section("parallel.data_sync"));
  EXPECT_NE(table.find("| `outer_momentum` | number in [0, 1) | `0.9` | *method diloco*: Nesterov"), std::string::npos)
      << table;
  const auto schema = fields::json_schema();
  EXPECT_EQ(schema["$defs"]["model"]["required"], nlohmann::ordered_json({"layers", "d_model", "heads", "ffn_hidden", "vocab",
                                                                  "seq_len"}));
  EXPECT_EQ(schema["$defs"]["parallel"]["properties"]["split"]["enum"], nlohmann::ordered_json({"zigzag", "contiguous"}));
  EXPECT_EQ(schema["properties"]["parallel"]["$ref"], "#/$defs/parallel");
}

}  // namespace
}  // namespace lowband::test
