#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "runtime/scenario/load.h"

namespace lowband::cli {

void add_validate_command(CLI::App& app) {
  auto files = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand("validate", "check scenario files without running them");
  cmd->add_option("FILE", *files, "scenario JSON files")->required();
  cmd->callback([files] {
    // Stops at the first bad file: its error is thrown with the file and JSON path in it.
    for (const auto& file : *files) {
      const Scenario scenario = load_scenario_file(file);
      std::cout << "ok  " << file << "  (" << scenario.name << ")\n";
    }
  });
}

}  // namespace lowband::cli
