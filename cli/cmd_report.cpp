// `lowband report RUN_DIR|SWEEP_DIR... [--target-loss X] [--baseline RUN_DIR] [--out FILE.md]`:
// a markdown table comparing the runs (runtime/report/report_table.h), on stdout or
// written atomically to FILE.md.
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "runtime/report/report_table.h"

namespace lowband::cli {

namespace {
struct ReportArgs {
  std::vector<std::string> inputs;
  std::optional<double> target_loss;
  std::string baseline;
  std::string out;
};
}  // namespace

void add_report_command(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "markdown table of run or sweep directories: tokens/s, time to a target loss, final validation "
                "loss and perplexity, bytes per step, measured K/V compression, time to target over a baseline's");
  cmd->add_option("dirs", args->inputs, "run directories (lowband run) or sweep directories (lowband sweep)")
      ->required();
  cmd->add_option("--target-loss", args->target_loss, "target loss (default: the highest final loss among the runs)");
  cmd->add_option("--baseline", args->baseline,
                  "run directory whose time to target the others are divided by (default: the uncompressed run "
                  "with the highest bandwidth)");
  cmd->add_option("--out", args->out, "markdown file to write (default: standard output)");
  cmd->callback([args] {
    check_target_loss(args->target_loss);
    report::LoadedRuns loaded = report::load_runs(args->inputs, "dirs");
    for (const std::string& note : loaded.notes) std::cerr << "note: " << note << "\n";
    const report::Report r = report::build_report(std::move(loaded), {args->target_loss, args->baseline});
    const std::string markdown = report::report_markdown(r);
    if (flags_only()) return;  // checked: nothing printed or written
    if (args->out.empty()) {
      std::cout << markdown;
      return;
    }
    try {
      write_file_atomically(args->out, markdown);
    } catch (const std::runtime_error& e) {
      throw InputError("--out", e.what());
    }
    std::cout << "report: " << args->out << "\n";
  });
}

}  // namespace lowband::cli
