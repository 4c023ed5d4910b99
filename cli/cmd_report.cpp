// `lowband report RUN_DIR|SWEEP_DIR... [--target-loss X,...] [--target-fraction F,...]
// [--baseline RUN_DIR] [--answer-threshold A] [--out FILE.md]`: a markdown table comparing the arms (runs
// grouped by seed, with intervals; runtime/report/report_table.h), on stdout or
// written atomically to FILE.md. Runs of the keyed-recall task get a second table
// (runtime/report/report_answers.h).
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "runtime/report/report_table.h"
#include "runtime/report/run_metrics.h"

namespace lowband::cli {

namespace {
struct ReportArgs {
  std::vector<std::string> inputs;
  std::vector<std::string> labels;
  std::vector<double> target_losses;
  std::vector<double> target_fractions = report::kDefaultTargetFractions;
  std::string baseline;
  double answer_threshold = report::kDefaultAnswerThreshold;
  std::string out;
};
}  // namespace

void add_report_command(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "markdown table of run or sweep directories, runs that differ only by seed grouped into one arm "
                "(mean ± 95 % Student-t interval): tokens/s, time to several target losses, final validation loss "
                "and its difference from the baseline (Welch's t-test), bytes per step, measured K/V compression");
  cmd->add_option("dirs", args->inputs, "run directories (lowband run) or sweep directories (lowband sweep)")
      ->required();
  cmd->add_option("--labels", args->labels,
                  "one name per directory, comma-separated, for its runs in place of their scenario's name (arms "
                  "of one scenario that differ by --set)")
      ->delimiter(',');
  cmd->add_option("--target-loss", args->target_losses,
                  "target losses, comma-separated or repeated (default: --target-fraction of the baseline's drop)")
      ->delimiter(',');
  cmd->add_option("--target-fraction", args->target_fractions,
                  "targets as fractions of the baseline arm's drop in validation loss from its first evaluation to "
                  "its last, comma-separated (default 0.5,0.75,0.9,1)")
      ->delimiter(',');
  cmd->add_option("--baseline", args->baseline,
                  "run directory whose time to target the others are divided by (default: the uncompressed run "
                  "with the highest bandwidth)");
  cmd->add_option("--answer-threshold", args->answer_threshold,
                  "keyed-recall runs: the remote-answer accuracy whose steps and time to reach are tabled "
                  "(default 0.9)");
  cmd->add_option("--out", args->out, "markdown file to write (default: standard output)");
  cmd->callback([args, cmd] {
    for (double loss : args->target_losses) check_target_loss(loss);
    if (cmd->count("--target-loss") && cmd->count("--target-fraction"))
      throw InputError("--target-fraction", "give targets either as losses (--target-loss) or as fractions, not both");
    for (double f : args->target_fractions)
      if (!(f > 0 && f <= 2))
        throw InputError("--target-fraction", "each must be in (0, 2] (1: the baseline's final loss), got " +
                                                   report::format_number(f, 4));
    if (!(args->answer_threshold > 0 && args->answer_threshold <= 1))
      throw InputError("--answer-threshold", "must be in (0, 1], got " + report::format_number(args->answer_threshold, 4));
    report::LoadedRuns loaded = report::load_runs(args->inputs, "dirs", args->labels);
    for (const std::string& note : loaded.notes) std::cerr << "note: " << note << "\n";
    const report::Report r = report::build_report(std::move(loaded), {args->target_losses, args->target_fractions, args->baseline, args->answer_threshold});
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
