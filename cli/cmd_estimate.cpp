#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "runtime/estimate.h"

namespace lowband::cli {

namespace {
struct EstimateArgs {
  ScenarioSource source;
  bool json = false;
  std::string out;
};
}  // namespace

void add_estimate_command(CLI::App& app) {
  auto args = std::make_shared<EstimateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "estimate",
      "step time and tokens/s of context-parallel training, from the model's shapes alone");
  add_scenario_options(cmd, args->source);
  cmd->add_flag("--json", args->json, "print one JSON object instead of a table");
  cmd->add_option("--out", args->out, "also write the JSON object to this file (atomically)");
  cmd->callback([args] {
    const Scenario scenario = load_scenario(args->source);
    const EstimateResult result = estimate(scenario);
    nlohmann::json json = to_json(result);
    json["scenario"] = scenario.name;
    json["scenario_source"] = scenario.source;
    if (args->json)
      std::cout << json.dump(2) << "\n";
    else
      std::cout << format_estimate_table(scenario, result);
    if (!args->out.empty()) write_file_atomically(args->out, json.dump(2) + "\n");
  });
}

}  // namespace lowband::cli
