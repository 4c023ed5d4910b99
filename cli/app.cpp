// The app's subcommands, and the flags-only switch (cli/commands.h).
#include "cli/commands.h"

namespace lowband::cli {

namespace {
bool g_flags_only = false;
}  // namespace

void set_flags_only(bool on) { g_flags_only = on; }
bool flags_only() { return g_flags_only; }

void add_all_commands(CLI::App& app) {
  app.require_subcommand(1);
  add_validate_command(app);
  add_estimate_command(app);
  add_bench_comm_command(app);
  add_tokenize_command(app);
  add_run_command(app);
  add_sweep_command(app);
  add_plot_command(app);
  add_report_command(app);
  add_scenario_docs_command(app);
}

}  // namespace lowband::cli
