#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "runtime/data_estimate.h"
#include "runtime/estimate.h"
#include "runtime/parallel/layout.h"
#include "runtime/pipeline_estimate.h"

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
    nlohmann::json json;
    std::string table;
    const parallel::LayoutKind kind = parallel::layout_kind(scenario.parallel);  // as make_trainer picks
    if (kind == parallel::LayoutKind::data) {  // replicas, each of any layout
      const DataEstimate result = estimate_data(scenario);
      json = to_json(result);
      table = format_data_table(scenario, result);
    } else if (kind == parallel::LayoutKind::pipeline) {  // stages, with context ranks inside or not
      const PipelineEstimate result = estimate_pipeline(scenario);
      json = to_json(result);
      table = format_pipeline_table(scenario, result);
    } else {
      const EstimateResult result = estimate(scenario);
      json = to_json(result);
      table = format_estimate_table(scenario, result);
    }
    json["scenario"] = scenario.name;
    json["scenario_source"] = scenario.source;
    if (args->json)
      std::cout << json.dump(2) << "\n";
    else
      std::cout << table;
    if (!args->out.empty()) write_file_atomically(args->out, json.dump(2) + "\n");
  });
}

}  // namespace lowband::cli
