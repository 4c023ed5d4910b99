#include <iostream>
#include <memory>

#include "cli/bench_comm_transport.h"
#include "cli/commands.h"
#include "common/error.h"
#include "runtime/scenario/units.h"
#include "sim/comm_bench.h"

namespace lowband::cli {

namespace {
struct BenchCommArgs {
  ScenarioSource source;
  std::vector<std::string> sizes = {"1KB", "64KB", "1MB", "16MB", "256MB", "1GB"};
  std::vector<std::string> collectives = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p"};
  int ranks = 0;
  std::string transport = "simulated";
  int iters = 0;
};

sim::Collective parse_collective(const std::string& name) {
  for (auto c : {sim::Collective::all_gather, sim::Collective::reduce_scatter, sim::Collective::all_reduce,
                 sim::Collective::all_to_all, sim::Collective::p2p})
    if (name == sim::to_string(c)) return c;
  throw InputError("--collectives", "unknown collective \"" + name +
                                        "\" (expected all_reduce, all_gather, reduce_scatter, all_to_all, p2p)");
}
}  // namespace

void add_bench_comm_command(CLI::App& app) {
  auto args = std::make_shared<BenchCommArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench-comm", "nccl-tests-style table of each collective's time and bandwidth on a scenario's network");
  add_scenario_options(cmd, args->source);
  CLI::Option* sizes_option =
      cmd->add_option("--sizes", args->sizes, "buffer sizes S with units (e.g. 1MB,1GiB)")->delimiter(',');
  CLI::Option* collectives_option =
      cmd->add_option("--collectives", args->collectives, "which collectives")->delimiter(',');
  cmd->add_option("--ranks", args->ranks, "participants 0..N-1 (default: the scenario's ranks)");
  cmd->add_option("--transport", args->transport,
                  "simulated (the scenario's network), in-process (threads) or mpi (under mpirun -np P): "
                  "the last two time lowband's own communicators on this machine")
      ->check(CLI::IsMember({"simulated", "in-process", "mpi"}));
  cmd->add_option("--iters", args->iters, "in-process/mpi: timed calls per row (default: about 0.2 s worth)");
  cmd->callback([args, sizes_option, collectives_option] {
    if (args->transport != "simulated")
      return run_transport_bench({args->transport, sizes_option->count() ? args->sizes : std::vector<std::string>{},
                                  collectives_option->count() ? args->collectives : std::vector<std::string>{},
                                  args->ranks, args->iters},
                                 [&] { return load_scenario(args->source).parallel.ranks(); });
    const Scenario scenario = load_scenario(args->source);
    std::vector<double> sizes_bytes;
    for (const auto& s : args->sizes) sizes_bytes.push_back(units::parse_bytes(s, "--sizes"));
    std::vector<sim::Collective> collectives;
    for (const auto& c : args->collectives) collectives.push_back(parse_collective(c));
    const int p = args->ranks > 0 ? args->ranks : scenario.parallel.ranks();
    if (p < 2 || p > scenario.network.nodes)
      throw InputError("--ranks", "need 2.." + std::to_string(scenario.network.nodes) +
                                      " ranks on this network, got " + std::to_string(p));
    std::vector<int> ranks(static_cast<size_t>(p));
    for (int i = 0; i < p; ++i) ranks[static_cast<size_t>(i)] = i;
    const auto rows = sim::run_comm_bench(scenario.network, ranks, sizes_bytes, collectives);
    std::cout << "# scenario " << scenario.name << " (" << scenario.source << "), " << p << " ranks\n";
    sim::print_comm_bench(std::cout, scenario.network, rows);
  });
}

}  // namespace lowband::cli
