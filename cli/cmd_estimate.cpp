// `lowband estimate [SCENARIO] [--set KEY=VALUE]... [--json] [--out FILE]`: one
// step of the scenario's layout (runtime/estimate/). A --set whose value has
// top-level commas, or the file's "sweep" section, makes it a grid (the axes as
// `lowband sweep` reads them, runtime/scenario/grid.h): one row per point, and
// --csv FILE, --json, --plot FILE.svg|png.
#include <climits>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "runtime/estimate/estimate.h"
#include "runtime/estimate/grid.h"
#include "runtime/report/plot_gnuplot.h"
#include "runtime/scenario/grid.h"

namespace lowband::cli {

namespace {

namespace fs = std::filesystem;

struct EstimateArgs {
  ScenarioSource source;
  int steps = INT_MIN;  // not given; else training.steps, as run --steps: the steps replayed on a changing network
  bool json = false;
  std::string out, csv, plot;
};

// --plot FILE.svg (or .png): its directory must exist; gnuplot must run.
void check_plot_target(const std::string& path) {
  const fs::path p(path);
  const std::string ext = p.extension().string();
  if (ext.size() < 2 || !report::is_image_format(ext.substr(1)))
    throw InputError("--plot", "expected FILE.svg or FILE.png, got " + path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError("--plot", "no such directory: " + dir.string());
  try {
    report::require_gnuplot();
  } catch (const report::GnuplotError& e) {
    throw InputError("--plot", e.what());
  }
}

// --out, --csv and --plot (with its FILE.dat and FILE.gp) name different files.
void check_distinct_outputs(const EstimateArgs& a) {
  std::vector<std::pair<std::string, fs::path>> named;
  std::error_code ec;
  auto add = [&](const std::string& flag, const fs::path& path) {
    const fs::path resolved = fs::weakly_canonical(path, ec);
    for (const auto& [other, p] : named)
      if (p == resolved)
        throw InputError(flag, "names the same file as " + other + " (" + path.string() + "): each output needs its own");
    named.emplace_back(flag, resolved);
  };
  if (!a.out.empty()) add("--out", a.out);
  if (!a.csv.empty()) add("--csv", a.csv);
  if (!a.plot.empty())
    for (const char* ext : {"", ".dat", ".gp"})
      add("--plot", *ext ? fs::path(a.plot).replace_extension(ext) : fs::path(a.plot));
}

void write_outputs(const EstimateArgs& a, const nlohmann::json& json, const std::string& csv) {
  if (!a.out.empty()) write_file_atomically(a.out, json.dump(2) + "\n");
  if (!a.csv.empty()) write_file_atomically(a.csv, csv);
}

// --steps counts the steps replayed on network.dynamics; where no point has one the
// flag would do nothing (a grid of some changing networks takes it, whatever their order).
void check_steps_flag(const EstimateArgs& a, const std::vector<const Scenario*>& points) {
  if (a.steps <= 0) return;
  for (const Scenario* s : points)
    if (!s->network.dynamics.empty()) return;
  throw InputError("--steps", std::string("counts the steps replayed on a changing network (network.dynamics); ") +
                                  (points.size() > 1 ? "no point's network changes" : "this scenario's network is constant") +
                                  ", so every step takes the estimated step time");
}

void single_point(const EstimateArgs& a, const Scenario& scenario) {
  check_steps_flag(a, {&scenario});
  if (flags_only()) return;  // checked: no estimate, nothing written
  const Estimate result = estimate(scenario);  // the layout LayoutTrainer trains (parallel::layout_kind)
  nlohmann::json json = to_json(result);
  json["scenario"] = scenario.name;
  json["scenario_source"] = scenario.source;
  if (a.json)
    std::cout << json.dump(2) << "\n";
  else
    std::cout << format_estimate_table(scenario, result);
  std::string csv;
  if (!a.csv.empty()) {  // one row, as a grid's
    grid::SweepPoint point{scenario.name, {}, scenario};
    csv = grid_csv(EstimateGrid{scenario.name, scenario.source, {}, {EstimateGridPoint{point, result}}});
  }
  write_outputs(a, json, csv);
}

void run_estimate(EstimateArgs a) {
  if (a.steps != INT_MIN) {
    if (a.steps < 1 || a.steps > 1000000)
      throw InputError("--steps", "must be 1..1000000, got " + std::to_string(a.steps));
    a.source.sets.push_back("training.steps=" + std::to_string(a.steps));
  }
  check_distinct_outputs(a);
  const ScenarioText base = scenario_text(a.source);
  const grid::SweepSpec spec = grid::make_spec(base.text, base.source, a.source.sets);
  const bool had_sweep_section =
      !spec.axes.empty() || nlohmann::json::parse(base.text, nullptr, false).contains("sweep");
  if (!a.plot.empty() && spec.axes.empty())
    throw InputError("--plot", "needs a grid with a numeric axis, e.g. --set network.bandwidth=80Mbps,300Mbps,1Gbps");
  if (!had_sweep_section) {  // one point, as before grids
    ScenarioSource source = a.source;
    if (source.file.empty() && source.builtin.empty()) source.builtin = "default";  // scenario_text said so
    single_point(a, load_scenario(source));
    return;
  }
  const grid::SweepPlan plan = grid::plan_sweep(spec);  // every point validated before any estimate
  if (spec.axes.empty()) {  // a sweep section whose every axis a --set fixed
    single_point(a, plan.points.front().scenario);
    return;
  }
  int axis = -1;
  if (!a.plot.empty()) {
    axis = numeric_axis(plan, "--plot");
    check_plot_target(a.plot);
  }
  std::vector<const Scenario*> points;
  for (const grid::SweepPoint& p : plan.points) points.push_back(&p.scenario);
  check_steps_flag(a, points);
  if (flags_only()) return;
  const EstimateGrid grid = estimate_grid(plan);
  const nlohmann::json json = grid_json(grid);
  if (a.json)
    std::cout << json.dump(2) << "\n";
  else
    std::cout << format_grid_table(grid);
  // The plot first: when gnuplot fails, nothing has been written.
  if (axis >= 0) {
    const fs::path p(a.plot);
    const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
    const report::Figure figure = grid_figure(grid, plan, axis, p.stem().string());
    try {
      report::render_figure(figure, dir.string(), {p.extension().string().substr(1)});
    } catch (const report::GnuplotError& e) {
      throw CommandFailed(std::string("--plot: ") + e.what(), 1);
    }
    if (!a.json) std::cout << "plot: " << a.plot << " (data and gnuplot script beside it: " << p.stem().string()
                           << ".dat, .gp)\n";
  }
  write_outputs(a, json, a.csv.empty() ? "" : grid_csv(grid));
}

}  // namespace

void add_estimate_command(CLI::App& app) {
  auto args = std::make_shared<EstimateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "estimate",
      "step time, tokens/s and the physical bound (busiest link, latency chain, compute) of context-, pipeline- "
      "(parallel.pipeline > 1, with parallel.context ranks per stage) or data-parallel training (parallel.data > 1 "
      "or parallel.replicas: all_reduce, diloco, sparseloco), from the training's own rank programs run dry (shapes "
      "only); over a grid with --set KEY=V1,V2,... or the file's \"sweep\" section");
  add_scenario_options(cmd, args->source);
  cmd->get_option("--set")->description(
      "override a key; a value with top-level commas is an axis of a grid, as in lowband sweep, e.g. "
      "--set network.bandwidth=80Mbps,300Mbps,1Gbps (repeatable)");
  cmd->add_option("--steps", args->steps,
                  "sets training.steps (as run --steps does): on a changing network (network.dynamics), the "
                  "steps replayed back to back on its clock for the run's time and the time lost");
  cmd->add_flag("--json", args->json, "print one JSON object instead of a table (a grid: {\"points\": [...]})");
  cmd->add_option("--out", args->out, "also write the JSON object to this file (atomically)");
  cmd->add_option("--csv", args->csv, "also write one CSV row per point (a header line first) to this file");
  cmd->add_option("--plot", args->plot,
                  "a grid: draw tokens/s (and its bound) against the first numeric axis into FILE.svg or FILE.png "
                  "(gnuplot; FILE.dat and FILE.gp beside it), one series per value of the other axes");
  cmd->callback([args] { run_estimate(*args); });
}

}  // namespace lowband::cli
