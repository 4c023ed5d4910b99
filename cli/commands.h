#pragma once
// The `lowband` subcommands. Each add_*_command registers one subcommand on the
// app; its callback does the work and throws lowband::InputError on bad input
// (main prints it on one line and exits with status 2).
#include <CLI/CLI.hpp>

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

// A scenario file's text; InputError naming the path when it cannot be read.
std::string read_scenario_text(const std::string& path);
// The source's text and name ("FILE" or "builtin:NAME"), without its --sets: the
// base of a grid (sweep::make_spec), as `sweep` and `estimate` read it.
struct ScenarioText {
  std::string text, source;
};
ScenarioText scenario_text(const ScenarioSource& source);

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
