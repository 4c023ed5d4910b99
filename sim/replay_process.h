#pragma once
// The process sim::replay runs SimGrid in (internal to sim/). SimGrid's engine
// is one per process and cannot be reset, so every replay needs a process that
// has run none; a fork of lowband itself could inherit a lock one of its rank
// threads or OpenMP pools held, and wait on it for ever. So lowband spawns
// lowband-replay (replay_main.cpp) once, on its first replay, and keeps it: a
// process of one thread, which forks a fresh child for each request (safe: it
// has no other thread), and answers on its behalf.
//
// The request (replay_wire.h) goes down a pipe to its standard input; the
// answer (replay_engine.h's reply_to: figures or an error, length first) comes
// back on its file descriptor 3. One request at a time (a mutex). The program is
// $LOWBAND_REPLAY, else lowband-replay beside the running program, else where
// the build put it. It ends when lowband does (its input closes); a child of
// lowband's that forks gets its own.
#include <string>
#include <vector>

#include "sim/network.h"
#include "sim/replay.h"
#include "sim/step_graph.h"

namespace lowband::sim::detail {

// The reply's bytes for one request. std::runtime_error when the replay process
// cannot be started or ends without answering (the next call starts another).
std::string ask_replay_process(const NetworkSpec& network, const std::vector<const StepGraph*>& graphs,
                               const ReplayOptions& options);

}  // namespace lowband::sim::detail
