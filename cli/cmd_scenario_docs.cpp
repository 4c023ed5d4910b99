// `lowband scenario-docs [--write] [--root DIR]`: the key tables of
// scenarios/README.md and docs/scenario.schema.json, generated from the
// field tables (runtime/scenario/fields_*.cpp). Without --write it checks
// them: exit status 1 naming each stale file (CI runs that check as a test).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <tuple>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "runtime/scenario/field_docs.h"

namespace lowband::cli {
namespace {

struct DocsArgs {
  bool write = false;
  std::string root = LOWBAND_SOURCE_DIR;
};

// A regular file's text; anything else (a directory, a fifo that would block) is
// refused before it is opened.
std::string read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(path.string(), "not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string(), "cannot read it");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void run_docs(const DocsArgs& a) {
  const std::filesystem::path readme = std::filesystem::path(a.root) / "scenarios" / "README.md";
  const std::filesystem::path schema = std::filesystem::path(a.root) / "docs" / "scenario.schema.json";
  const std::string readme_now = read_file(readme);
  std::string readme_new;
  try {
    readme_new = fields::with_generated_tables(readme_now);
  } catch (const std::invalid_argument& e) {
    throw InputError(readme.string(), e.what());
  }
  const std::string schema_new = fields::json_schema_text();
  std::error_code ec;
  const std::string schema_now = std::filesystem::exists(schema, ec) ? read_file(schema) : "";
  if (flags_only()) return;  // --root's files read: nothing compared or written
  std::string stale;
  for (const auto& [path, now, fresh] : {std::tuple{readme, readme_now, readme_new},
                                         std::tuple{schema, schema_now, schema_new}}) {
    if (now == fresh) continue;
    if (a.write) {
      write_file_atomically(path.string(), fresh);
      std::cout << "wrote " << path.string() << "\n";
    } else {
      stale += (stale.empty() ? "" : ", ") + path.string();
    }
  }
  if (!stale.empty())
    throw CommandFailed("stale (the field tables in runtime/scenario/fields_*.cpp say otherwise): " + stale +
                            "; regenerate with lowband scenario-docs --write",
                        1);
  if (!a.write) std::cout << "scenario docs up to date\n";
}

}  // namespace

void add_scenario_docs_command(CLI::App& app) {
  auto args = std::make_shared<DocsArgs>();
  CLI::App* cmd = app.add_subcommand(
      "scenario-docs", "check (or --write) the key tables of scenarios/README.md and docs/scenario.schema.json, "
                       "generated from the scenario's field tables");
  cmd->add_flag("--write", args->write, "rewrite the stale files instead of failing");
  cmd->add_option("--root", args->root, "the repository root (default: the source tree lowband was built from)");
  cmd->callback([args] { run_docs(*args); });
}

}  // namespace lowband::cli
