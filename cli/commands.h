#pragma once
// The `lowband` subcommands. Each add_*_command registers one subcommand on the
// app; its callback does the work and throws lowband::InputError on bad input
// (main prints it on one line and exits with status 2).
#include <CLI/CLI.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/scenario/scenario.h"

namespace lowband::cli {

// A command that ran but failed for a reason other than bad input (a diverged run):
// main prints the message and exits with `exit_code`.
struct CommandFailed : std::runtime_error {
  CommandFailed(const std::string& message, int code) : std::runtime_error(message), exit_code(code) {}
  int exit_code;
};

// Where a command's scenario comes from: a file, or a built-in by name, with --set overrides.
struct ScenarioSource {
  std::string file;
  std::string builtin;
  std::vector<std::string> sets;
};
void add_scenario_options(CLI::App* command, ScenarioSource& source);
Scenario load_scenario(const ScenarioSource& source);

// Flags that size the work on this machine (cli/flag_limits.cpp). --threads, --jobs
// and in-process --ranks: 1..4 x the cores (past that, threads only wait on each
// other: --threads 100000 ended in a libgomp failure, --threads 4096 took 32 s).
int max_threads_here();
void check_count_here(const std::string& flag, int n, const char* what);
// report and plot --target-loss: positive and finite.
void check_target_loss(const std::optional<double>& target);
// --builtin NAME: one of builtin_scenario_names(), else an error naming the flag.
void check_builtin_name(const std::string& name);
// An empty argument ("--out ''", "--out=", a file '') is an error naming its flag:
// no command reads an empty value as anything but a mistake.
void check_no_empty_argument(int argc, char** argv);
// OMP_NUM_THREADS, which OpenMP reads on its own: each level a count of 1..max_threads_here()
// ("4" or "4,2"), or InputError naming it (an absurd count would fail in libgomp mid-run).
void check_omp_num_threads_env();
// A scenario file's text; InputError naming the path when it cannot be read.
std::string read_scenario_text(const std::string& path);
// The source's text and name ("FILE" or "builtin:NAME"), without its --sets: the
// base of a grid (grid::make_spec), as `sweep` and `estimate` read it.
struct ScenarioText {
  std::string text, source;
};
ScenarioText scenario_text(const ScenarioSource& source);

// Every subcommand above on `app`, one required: the app main parses (and the CLI
// fuzz target, tests/fuzz/fuzz_cli_flags.cpp).
void add_all_commands(CLI::App& app);
// Flags only: each command checks its flags (and the scenario they name) as usual,
// then returns before any work or write. For the CLI fuzz target; off in lowband.
void set_flags_only(bool on);
bool flags_only();

void add_validate_command(CLI::App& app);
void add_estimate_command(CLI::App& app);
void add_bench_comm_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_plot_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_scenario_docs_command(CLI::App& app);

}  // namespace lowband::cli
