#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "runtime/scenario/load.h"
#include "sim/network.h"

namespace lowband::cli {

void add_validate_command(CLI::App& app) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto resolved = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("validate", "check scenario files (or network files) without running them");
  cmd->add_option("FILE", *files, "scenario JSON files, or network files (scenarios/networks/)")->required();
  cmd->add_flag("--resolved", *resolved,
                "print each scenario as lowband resolves it (every default filled in, as a run "
                "directory's scenario.json) instead of \"ok\": one JSON object per line");
  cmd->callback([files, resolved] {
    // Stops at the first bad file: its error is thrown with the file and JSON path in it.
    for (const auto& file : *files) {
      if (const std::optional<Scenario> with = load_network_file(file)) {  // a network file alone
        if (*resolved)
          std::cout << to_json(*with)["network"].dump() << "\n";
        else
          std::cout << "ok  " << file << "  (network: " << sim::describe(with->network) << ")\n";
        continue;
      }
      const Scenario scenario = load_scenario_file(file);
      if (*resolved)
        std::cout << to_json(scenario).dump() << "\n";
      else
        std::cout << "ok  " << file << "  (" << scenario.name << ")\n";
    }
  });
}

}  // namespace lowband::cli
