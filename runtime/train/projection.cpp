#include "runtime/train/projection.h"

namespace lowband::train {
namespace {

Scenario without_compression(Scenario s) {
  s.compression.method = CompressionMethod::none;
  return s;
}

sim::ReplayResult as_replay(const Estimate& e) {
  sim::ReplayResult r;
  r.step_seconds = e.step_seconds;
  r.rank_finish_seconds = {e.step_seconds};
  r.rank_compute_busy_seconds = {e.compute_seconds};
  // A replay's exposed communication: step − the busiest rank's compute.
  r.rank_exposed_comm_seconds = {e.step_seconds - e.compute_seconds};
  r.exposed_comm_seconds = e.step_seconds - e.compute_seconds;
  return r;
}

}  // namespace

StepTimeProjection::StepTimeProjection(const Scenario& projected)
    : name_(projected.name),
      description_(projected.description),
      compressed_(estimate(projected)),
      uncompressed_(estimate(without_compression(projected))) {}

sim::ReplayResult StepTimeProjection::step(bool compressed) const {
  return as_replay(compressed ? compressed_ : uncompressed_);
}

nlohmann::json StepTimeProjection::describe() const {
  return {{"scenario", name_},
          {"description", description_},
          {"note", "loss from this run; simulated seconds per step from `lowband estimate` of the projected scenario"},
          {"network", compressed_.network},
          {"tokens_per_step", compressed_.tokens_per_step},
          {"step_seconds", compressed_.step_seconds},
          {"uncompressed_step_seconds", uncompressed_.step_seconds},
          {"bytes_per_rank_per_step", compressed_.bytes_per_rank_per_step},
          {"bound", to_json(compressed_.bound)},  // the projected step's physical bound
          {"uncompressed_bound_seconds", uncompressed_.bound.bound_seconds}};
}

}  // namespace lowband::train
