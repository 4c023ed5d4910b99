#pragma once
// The replays of one network: every step's graph with measured timing; with
// profile timing the graphs repeat, so one replay per distinct graph (keyed by its
// task count and transfer sizes).
#include <map>
#include <string>
#include <vector>

#include "sim/replay.h"

namespace lowband::train {

class Replayer {
 public:
  Replayer(const sim::NetworkSpec& network, bool cache) : network_(network), cache_(cache) {}

  std::vector<sim::ReplayResult> replay(const std::vector<const sim::StepGraph*>& graphs);

  double wall_seconds = 0;  // spent replaying, all calls

 private:
  static std::string key(const sim::StepGraph& graph);
  const sim::NetworkSpec& network_;
  bool cache_;
  std::map<std::string, sim::ReplayResult> results_;
};

}  // namespace lowband::train
