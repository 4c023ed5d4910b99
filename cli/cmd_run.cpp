// `lowband run [SCENARIO] [--set k=v]... [--out RUN_DIR] [--steps N]`: train with
// context parallelism over simulated ranks and write a run directory
// (runtime/train/run.h). Exit status 3 when the loss diverges.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "common/error.h"
#include "runtime/train/run.h"

namespace lowband::cli {

namespace {
struct RunArgs {
  ScenarioSource source;
  std::string out;
  int steps = -1;
};
}  // namespace

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "train the scenario's model over context-parallel ranks, replay each step on its network, "
             "and write a run directory (scenario.json, steps.jsonl, curve.csv, summary.json)");
  add_scenario_options(cmd, args->source);
  cmd->add_option("--out", args->out, "run directory (default runs/<scenario name>-<UTC timestamp>)");
  cmd->add_option("--steps", args->steps, "training steps (default training.steps)");
  cmd->callback([args] {
    const Scenario scenario = load_scenario(args->source);
    if (args->steps == 0 || args->steps < -1) throw InputError("--steps", "must be at least 1");
    train::RunOptions options;
    options.out_dir = args->out;
    options.steps = args->steps;
    options.log = &std::cout;
    std::cout << "scenario " << scenario.name << " (" << scenario.source << "): " << scenario.model.layers
              << " layers, d_model " << scenario.model.d_model << ", seq_len " << scenario.model.seq_len << ", P = "
              << scenario.parallel.context << "\n";
    const train::RunResult r = train::run_training(scenario, options);
    std::cout << "run directory: " << r.run_dir << "\n";
    if (r.diverged)
      throw CommandFailed(r.message + " (run directory " + r.run_dir + " is complete up to it)", 3);
    std::cout << "final train loss " << r.final_train_loss;
    if (r.final_val_loss) std::cout << ", validation loss " << *r.final_val_loss;
    std::cout << "; simulated " << r.sim_total_seconds << " s; harness overhead "
              << 100.0 * r.harness_overhead_fraction << " % of step time\n";
  });
}

}  // namespace lowband::cli
