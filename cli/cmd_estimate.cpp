#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "runtime/estimate/estimate.h"

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
      "step time and tokens/s of context-, pipeline- (parallel.pipeline > 1, with parallel.context ranks per "
      "stage) or data-parallel training (parallel.data > 1 or parallel.replicas: all_reduce, diloco, sparseloco), "
      "from the training's own rank programs run dry (shapes only)");
  add_scenario_options(cmd, args->source);
  cmd->add_flag("--json", args->json, "print one JSON object instead of a table");
  cmd->add_option("--out", args->out, "also write the JSON object to this file (atomically)");
  cmd->callback([args] {
    const Scenario scenario = load_scenario(args->source);
    const Estimate result = estimate(scenario);  // picks the layout as make_trainer does
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
