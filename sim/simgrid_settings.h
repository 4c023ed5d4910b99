#pragma once
// network.simgrid, checked before anything runs: the SimGrid settings lowband
// passes on (Engine::set_config in build_platform, in the replay child), each with
// its type and a range SimGrid survives. SimGrid itself checks only some of them,
// and late: maxmin/precision -1 segfaults its solver, network/model "ns-3" or
// "Constant", cpu/model "nope" and network/bandwidth-factor 0 abort, an unknown key
// prints its 100-line help, and network/latency-factor -5 makes latency vanish.
// Settings of SimGrid's CPU, host, disk, contexts or tracing have no effect on a
// replay (it times compute itself) or break it, and are not passed on.
#include <string>

namespace lowband::sim {

// "" when SimGrid may be given `key` = `value` (as network.simgrid writes it: a string,
// or a number or boolean spelled as JSON), else why not, in a few words ("expected
// a number in [1e-12, 0.001], got -1").
std::string simgrid_setting_problem(const std::string& key, const std::string& value);

// The settings allowed, for the documentation: "`network/model` (CM02, LV08, SMPI,
// IB), `network/TCP-gamma` (number in [0, 1e12]), ...".
std::string simgrid_settings_allowed();

}  // namespace lowband::sim
