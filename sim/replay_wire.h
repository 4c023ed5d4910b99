#pragma once
// What the replay process (sim/replay_main.cpp, `lowband-replay`) is sent: the
// network, the graphs and the options, as bytes (sim/replay.h spawns it and
// writes them to its standard input).
#include <iosfwd>
#include <vector>

#include "sim/network.h"
#include "sim/replay.h"
#include "sim/step_graph.h"

namespace lowband::sim::wire {

struct Request {
  NetworkSpec network;
  std::vector<StepGraph> graphs;
  ReplayOptions options;
};

void write_request(std::ostream& out, const NetworkSpec& network, const std::vector<const StepGraph*>& graphs,
                   const ReplayOptions& options);
// binary::BinaryFormatError for bytes write_request did not give.
Request read_request(std::istream& in);

}  // namespace lowband::sim::wire
