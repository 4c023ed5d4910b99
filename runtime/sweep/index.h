#pragma once
// SWEEP_DIR/index.json, the contract `lowband plot` and `report` read:
//   {"sweep": NAME, "source": FILE, "axis_keys": [KEY, ...] (axis order),
//    "axes": {KEY: [value, ...], ...}, "trainings": N,
//    "points": [{"run_dir": "<relative to SWEEP_DIR>", "settings": {KEY: value, ...},
//                "status": "done"|"failed"|"pending", "trained_in": "<run_dir of the
//                point whose training it shares>", "message": "...", "group": G}, ...]}
// Points are in grid order (first axis outermost); "group" numbers the trainings
// from 1. A run directory is SWEEP_DIR/<point name>.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/scenario/grid.h"

namespace lowband::sweep {

enum class PointStatus { pending, done, failed };

struct PointState {
  PointStatus status = PointStatus::pending;
  std::string trained_in;  // run_dir (relative) of the point that trained; "" until known
  std::string message;     // why it failed
};

std::string to_string(PointStatus status);

nlohmann::ordered_json index_json(const grid::SweepPlan& plan, const std::vector<PointState>& states);

// The states a new sweep into `sweep_dir` starts from: a point is done when the
// directory's index.json says so, its run directory holds the same resolved
// scenario and its summary.json a finished, undiverged run; failed as the index
// says with keep_failed (what one training of the sweep leaves of the others');
// all others pending.
std::vector<PointState> previous_states(const grid::SweepPlan& plan, const std::string& sweep_dir, bool keep_failed = false);

// A markdown table, one row per point: status, where it trained, simulated
// tokens/s, simulated time and final validation loss (from its summary.json),
// then the failed points' messages.
std::string summary_table(const grid::SweepPlan& plan, const std::vector<PointState>& states, const std::string& sweep_dir);

}  // namespace lowband::sweep
