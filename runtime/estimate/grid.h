#pragma once
// `lowband estimate` over a grid: the points of a sweep plan (runtime/scenario/grid.h:
// `--set KEY=V1,V2,...` and the file's "sweep" section, parsed and resolved as
// `lowband sweep` does), each estimated as one scenario (estimate.h), and the
// results as one table, CSV, JSON and a figure of tokens/s against the first
// numeric axis (runtime/report/figures.h, drawn by plot_gnuplot.h).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/estimate/estimate.h"
#include "runtime/report/figures.h"
#include "runtime/scenario/grid.h"

namespace lowband {

struct EstimateGridPoint {
  grid::SweepPoint point;  // its name, its axes' values, its scenario
  Estimate estimate;
};

struct EstimateGrid {
  std::string base_name, source;
  std::vector<std::string> axes;  // the axes' keys, first outermost
  std::vector<EstimateGridPoint> points;
};

// Estimates every point of the plan, in order.
EstimateGrid estimate_grid(const grid::SweepPlan& plan);

// One row per point: the axes' values, step s, tokens/s, exposed comm s, bound s
// (and which bound), MFU.
std::string format_grid_table(const EstimateGrid& grid);

// A header line, then one line per point: name, each axis (its key as the column),
// step_seconds, tokens_per_s, compute_seconds, exposed_comm_seconds, bound_seconds,
// bound_kind, step_over_bound, busiest_link, busiest_link_seconds,
// latency_bound_seconds, mfu. Numbers as JSON writes them (they read back exactly).
std::string grid_csv(const EstimateGrid& grid);

// {"scenario", "scenario_source", "axes": [keys], "points": [{"name", "settings":
// {key: value}, every key of the point's estimate --json}]}.
nlohmann::json grid_json(const EstimateGrid& grid);

// The axis the figure's x is: the first whose every value is a number or a quantity
// with a unit (bandwidth, duration, bytes). InputError naming `place` (the flag)
// when no axis is.
int numeric_axis(const grid::SweepPlan& plan, const std::string& place);

// Tokens/s against that axis (log x for a bandwidth, in bits/s), one series per
// combination of the other axes' values; the figure's file stem is `name`.
report::Figure grid_figure(const EstimateGrid& grid, const grid::SweepPlan& plan, int axis, const std::string& name);

}  // namespace lowband
