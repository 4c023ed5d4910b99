#include "runtime/sync/participation.h"

#include <algorithm>
#include <stdexcept>

namespace lowband::sync {

int RoundClose::participants() const { return int(std::count(made_it.begin(), made_it.end(), true)); }

RoundClose close_round(const DataSyncConfig& config, const std::vector<double>& ready_seconds) {
  if (ready_seconds.empty()) throw std::invalid_argument("sync::close_round: no replicas");
  std::vector<double> sorted = ready_seconds;
  std::sort(sorted.begin(), sorted.end());
  RoundClose out;
  out.close_seconds = sorted.back();
  if (config.deadline_seconds >= 0) out.close_seconds = std::min(out.close_seconds, sorted.front() + config.deadline_seconds);
  if (config.quorum > 0)
    out.close_seconds = std::min(out.close_seconds, sorted[size_t(std::min<int>(config.quorum, int(sorted.size())) - 1)]);
  double last_in = sorted.front();
  for (double ready : ready_seconds) {
    out.made_it.push_back(ready <= out.close_seconds);
    if (out.made_it.back()) last_in = std::max(last_in, ready);
  }
  out.wait_seconds = out.close_seconds - last_in;
  return out;
}

}  // namespace lowband::sync
