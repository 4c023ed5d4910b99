#include <iostream>
#include <memory>

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
  cmd->add_option("--sizes", args->sizes, "buffer sizes S with units (e.g. 1MB,1GiB)")->delimiter(',');
  cmd->add_option("--collectives", args->collectives, "which collectives")->delimiter(',');
  cmd->add_option("--ranks", args->ranks, "participants 0..N-1 (default: the scenario's ranks)");
  cmd->callback([args] {
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
