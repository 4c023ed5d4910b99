#pragma once
// The order of one pipeline stage's work in a step: a forward (F) and a
// backward (B) for each of M microbatches. The per-rank program follows it
// (PipelineRank, which `estimate` runs dry).
//  - gpipe: F0 … F(M−1), then B0 … B(M−1): every microbatch's activations are
//    held at once, and the bubble is (P−1)/(M+P−1) of the step;
//  - one_f_one_b: stage s runs min(P−1−s, M) forwards ahead, then alternates
//    one forward and one backward, then drains the backwards: the same bubble,
//    but at most P−s microbatches' activations held (PipeDream-Flush, Megatron).
#include <vector>

#include "runtime/scenario/scenario.h"

namespace lowband::parallel {

struct PipelineOp {
  bool forward = true;
  int microbatch = 0;
};

// stage in [0, stages), microbatches >= 1.
std::vector<PipelineOp> pipeline_schedule(PipelineSchedule schedule, int stages, int stage, int microbatches);

// How many microbatches' activations the stage holds at once under `schedule`.
int pipeline_in_flight(PipelineSchedule schedule, int stages, int stage, int microbatches);

}  // namespace lowband::parallel
