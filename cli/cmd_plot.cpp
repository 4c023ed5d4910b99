// `lowband plot RUN_DIR|SWEEP_DIR... [--out DIR] [--format png,svg] [--target-loss X] [--curves C]`:
// loss vs simulated wall-clock time and vs step, tokens/s and time to a target loss
// vs bandwidth (one series per compression), drawn with gnuplot
// (runtime/report/figures.h, plot_gnuplot.h). Exit 2 when gnuplot is missing (as estimate --plot);
// exit 1 when it fails on a script lowband wrote (a bug).
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "common/error.h"
#include "runtime/report/figures.h"
#include "runtime/report/plot_gnuplot.h"
#include "runtime/report/run_metrics.h"

namespace lowband::cli {

namespace {
struct PlotArgs {
  std::vector<std::string> inputs;
  std::vector<std::string> labels;
  std::string out;
  std::vector<std::string> formats = {"png", "svg"};
  std::optional<double> target_loss;
  std::string curves = "auto";
};

// One input: INPUT/plots; several: ./plots.
std::string default_out_dir(const std::vector<std::string>& inputs) {
  return inputs.size() == 1 ? (std::filesystem::path(inputs[0]) / "plots").string() : "plots";
}
}  // namespace

void add_plot_command(CLI::App& app) {
  auto args = std::make_shared<PlotArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plot", "draw loss vs simulated time and vs step, tokens/s and time to a target loss vs bandwidth "
              "(PNG and SVG, with gnuplot) from run or sweep directories");
  cmd->add_option("dirs", args->inputs, "run directories (lowband run) or sweep directories (lowband sweep)")
      ->required();
  cmd->add_option("--labels", args->labels,
                  "one name per directory, comma-separated, for its runs in place of their scenario's name (arms "
                  "of one scenario that differ by --set)")
      ->delimiter(',');
  cmd->add_option("--out", args->out, "output directory (default: DIR/plots for one directory, ./plots for several)");
  cmd->add_option("--format", args->formats, "image formats: png, svg (default both)")->delimiter(',');
  cmd->add_option("--target-loss", args->target_loss,
                  "loss for the time-to-target figure (default: the highest final loss among the runs)");
  cmd->add_option("--curves", args->curves,
                  "loss curves per run: auto (train and validation up to " +
                      std::to_string(report::kMostRunsWithTrainingCurves) +
                      " runs, validation only beyond), both, validation")
      ->check(CLI::IsMember({"auto", "both", "validation"}));
  cmd->callback([args] {
    for (const std::string& f : args->formats)
      if (!report::is_image_format(f)) throw InputError("--format", "unknown format \"" + f + "\" (expected png, svg)");
    if (args->formats.empty()) throw InputError("--format", "give at least one of png, svg");
    check_target_loss(args->target_loss);
    const report::LoadedRuns loaded = report::load_runs(args->inputs, "dirs", args->labels);
    for (const std::string& note : loaded.notes) std::cerr << "note: " << note << "\n";
    const double target = args->target_loss ? *args->target_loss : report::default_target_loss(loaded.runs);
    const std::string origin = args->target_loss ? "--target-loss" : "highest final loss among the runs";
    const report::LossCurves curves = args->curves == "both"         ? report::LossCurves::both
                                      : args->curves == "validation" ? report::LossCurves::validation
                                                                     : report::LossCurves::automatic;
    const auto figures = report::build_figures(loaded.runs, target, origin, curves);
    if (flags_only()) return;  // checked: no gnuplot, nothing written
    try {
      report::require_gnuplot();  // before anything is written
    } catch (const report::GnuplotError& e) {
      throw InputError("gnuplot", e.what());  // an environment the user can fix: exit 2, as estimate --plot
    }
    const std::string out = args->out.empty() ? default_out_dir(args->inputs) : args->out;
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (!std::filesystem::is_directory(out)) throw InputError("--out", "cannot create the directory " + out);
    std::cout << loaded.runs.size() << (loaded.runs.size() == 1 ? " run" : " runs") << "; target loss "
              << report::format_number(target, 4) << " (" << origin << ")\n";
    try {
      for (const report::Figure& figure : figures) {
        for (const std::string& note : figure.notes) std::cerr << "note: " << figure.name << ": " << note << "\n";
        const auto written = report::render_figure(figure, out, args->formats);
        if (written.empty()) std::cerr << "note: " << figure.name << ": nothing to draw, no file written\n";
        for (const std::string& path : written) std::cout << path << "\n";
      }
    } catch (const report::GnuplotError& e) {
      throw CommandFailed(e.what(), 1);
    }
  });
}

}  // namespace lowband::cli
