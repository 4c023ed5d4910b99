#include "runtime/parallel/pipeline/schedule.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace lowband::parallel {

std::vector<PipelineOp> pipeline_schedule(PipelineSchedule schedule, int stages, int stage, int microbatches) {
  if (stages < 1 || stage < 0 || stage >= stages || microbatches < 1)
    throw std::invalid_argument("pipeline_schedule: stage " + std::to_string(stage) + " of " +
                                std::to_string(stages) + ", " + std::to_string(microbatches) + " microbatches");
  const int M = microbatches;
  std::vector<PipelineOp> ops;
  ops.reserve(size_t(2 * M));
  if (schedule == PipelineSchedule::gpipe) {
    for (int m = 0; m < M; ++m) ops.push_back({true, m});
    for (int m = 0; m < M; ++m) ops.push_back({false, m});
    return ops;
  }
  const int warmup = std::min(stages - 1 - stage, M);
  int next_f = 0, next_b = 0;
  for (; next_f < warmup; ++next_f) ops.push_back({true, next_f});
  while (next_f < M) {  // steady state: one forward, one backward
    ops.push_back({true, next_f++});
    ops.push_back({false, next_b++});
  }
  while (next_b < M) ops.push_back({false, next_b++});
  return ops;
}

int pipeline_in_flight(PipelineSchedule schedule, int stages, int stage, int microbatches) {
  int held = 0, most = 0;
  for (const PipelineOp& op : pipeline_schedule(schedule, stages, stage, microbatches)) {
    held += op.forward ? 1 : -1;
    most = std::max(most, held);
  }
  return most;
}

}  // namespace lowband::parallel
