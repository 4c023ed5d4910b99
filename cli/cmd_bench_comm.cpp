#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/bench_comm_transport.h"
#include "cli/commands.h"
#include "common/error.h"
#include "runtime/scenario/load.h"
#include "runtime/scenario/units.h"
#include "sim/comm_bench.h"

namespace lowband::cli {

namespace {
struct BenchCommArgs {
  ScenarioSource source;
  std::vector<std::string> sizes = {"1KB", "64KB", "1MB", "16MB", "256MB", "1GB"};
  std::vector<std::string> collectives = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p"};
  int ranks = 0;
  std::vector<int> pair;
  bool json = false;
  std::string transport = "simulated";
  int iters = 0;
  bool per_call = false;
};

constexpr sim::Collective kCollectives[] = {sim::Collective::all_gather, sim::Collective::reduce_scatter,
                                            sim::Collective::all_reduce, sim::Collective::all_to_all,
                                            sim::Collective::p2p,        sim::Collective::incast};

sim::Collective parse_collective(const std::string& name) {
  for (auto c : kCollectives)
    if (name == sim::to_string(c)) return c;
  throw InputError("--collectives", "unknown collective \"" + name +
                                        "\" (expected all_reduce, all_gather, reduce_scatter, all_to_all, p2p, incast)");
}

// A file with a "network" section and no "model" is a network-only scenario: the
// sections bench-comm does not use come from the built-in default, with one context
// rank so that any number of nodes fits. Anything else loads as a full scenario.
Scenario load_bench_scenario(const ScenarioSource& source, bool& network_only) {
  network_only = false;
  if (source.file.empty() || !source.builtin.empty()) return load_scenario(source);  // and its errors
  // Read as every scenario file is: a fifo or /dev/zero is refused, not waited on.
  const nlohmann::json doc = nlohmann::json::parse(read_scenario_text(source.file), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || doc.contains("model") || !doc.contains("network"))
    return load_scenario(source);  // and its errors, with line and column for bad JSON
  nlohmann::json full = nlohmann::json::parse(builtin_scenario_text("default"));
  full["name"] = "network-only";
  full.erase("description");
  full["parallel"]["context"] = 1;
  for (const auto& [key, value] : doc.items()) full[key] = value;
  apply_overrides(full, source.sets);
  network_only = true;
  return parse_scenario(full, source.file);
}

nlohmann::json rows_json(const Scenario& scenario, const std::vector<sim::CommBenchRow>& rows) {
  nlohmann::json out = {{"scenario", scenario.name},
                        {"source", scenario.source},
                        {"network", sim::describe(scenario.network)},
                        {"model", sim::to_string(scenario.network.model)},
                        {"rows", nlohmann::json::array()}};
  for (const auto& r : rows) {
    nlohmann::json j = {{"collective", sim::to_string(r.collective)},
                        {"ranks", r.ranks},
                        {"size_bytes", r.size_bytes},
                        {"time_seconds", r.time_seconds},
                        {"algbw_bytes_per_s", r.algbw_bytes_per_s},
                        {"busbw_bytes_per_s", r.busbw_bytes_per_s}};
    // No closed form: null (JSON has no NaN).
    j["expected_seconds"] = std::isfinite(r.expected_seconds) ? nlohmann::json(r.expected_seconds) : nullptr;
    j["deviation"] = std::isfinite(r.deviation) ? nlohmann::json(r.deviation) : nullptr;
    out["rows"].push_back(j);
  }
  return out;
}
}  // namespace

void add_bench_comm_command(CLI::App& app) {
  auto args = std::make_shared<BenchCommArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench-comm", "nccl-tests-style table of each collective's time and bandwidth on a scenario's network");
  add_scenario_options(cmd, args->source);
  CLI::Option* sizes_option =
      cmd->add_option("--sizes", args->sizes,
                      "buffer sizes S with units (1MB = 1e6 B, 1MiB = 2^20 B). S is what each rank holds: an "
                      "all-gather's S is the whole gathered buffer (each rank owns S/p); p2p and incast send S "
                      "per sender")
          ->delimiter(',');
  CLI::Option* collectives_option =
      cmd->add_option("--collectives", args->collectives,
                      "which collectives: all_reduce, all_gather, reduce_scatter, all_to_all, p2p, incast (simulated: "
                      "ranks 1..p-1 each send S to rank 0 at once)")
          ->delimiter(',');
  cmd->add_option("--ranks", args->ranks,
                  "participants 0..N-1 (in-process: at most 4 x the cores; default: the scenario's ranks; every node for a file with only a "
                  "\"network\" section, which is enough here)");
  cmd->add_option("--pair", args->pair, "simulated p2p from node A to node B (default: 0,1)")
      ->delimiter(',')
      ->expected(2);
  cmd->add_flag("--json", args->json, "simulated: print the rows as one JSON object instead of the table");
  cmd->add_option("--transport", args->transport,
                  "simulated (the scenario's network), in-process (threads), mpi or nccl (under mpirun -np P; "
                  "nccl: one GPU per process): the last three time lowband's own communicators on this machine")
      ->check(CLI::IsMember({"simulated", "in-process", "mpi", "nccl"}));
  cmd->add_option("--iters", args->iters, "in-process/mpi/nccl: timed calls per row (default: about 0.2 s worth)");
  cmd->add_flag("--per-call", args->per_call,
                "in-process/mpi/nccl: under each row, every timed call's time (the slowest rank's) and when it "
                "started (CLOCK_MONOTONIC seconds, rank 0)");
  cmd->callback([args, cmd, sizes_option, collectives_option] {
    if (cmd->count("--ranks") && args->ranks < 1) throw InputError("--ranks", "must be at least 1, got " + std::to_string(args->ranks));
    if (cmd->count("--iters") && (args->iters < 1 || args->iters > 1000000))
      throw InputError("--iters", "must be 1..1000000 (leave it out for about 0.2 s of calls per row), got " +
                                      std::to_string(args->iters));
    if (cmd->count("--iters") && args->transport == "simulated")
      throw InputError("--iters", "only with --transport in-process, mpi or nccl: a simulated row is timed once");
    if (args->per_call && args->transport == "simulated")
      throw InputError("--per-call", "only with --transport in-process, mpi or nccl: a simulated row is one call");
    // --pair places the p2p row: without p2p among the collectives it would do nothing.
    bool p2p_asked = false;
    for (const std::string& c : args->collectives) p2p_asked = p2p_asked || c == "p2p";
    if (!args->pair.empty() && !p2p_asked)
      throw InputError("--pair", "places the p2p row, and --collectives has no p2p: add it, or leave --pair out");
    if (args->transport != "simulated") {
      // Real transports time real calls: what only the simulated bench reads is refused, and
      // a scenario, when given, is read in full (its errors are the user's) for its rank count
      // (--ranks overrides it).
      if (args->json) throw InputError("--json", "only with --transport simulated (a real transport prints its table)");
      if (!args->pair.empty()) throw InputError("--pair", "only with --transport simulated (a real p2p row is ranks 0 and 1)");
      const bool scenario_given = !args->source.file.empty() || !args->source.builtin.empty() || !args->source.sets.empty();
      if (scenario_given && args->transport != "in-process")
        throw InputError(args->source.file.empty() ? (args->source.builtin.empty() ? "--set" : "--builtin") : args->source.file,
                         "with --transport " + args->transport + " the ranks are mpirun's (-np): no scenario is read");
      const int scenario_ranks = scenario_given ? load_scenario(args->source).parallel.ranks() : 0;
      return run_transport_bench({args->transport, sizes_option->count() ? args->sizes : std::vector<std::string>{},
                                  collectives_option->count() ? args->collectives : std::vector<std::string>{},
                                  args->ranks, args->iters, args->per_call},
                                 [&] { return scenario_given ? scenario_ranks : load_scenario(args->source).parallel.ranks(); });
    }
    std::vector<double> sizes_bytes;
    for (const auto& s : args->sizes) sizes_bytes.push_back(bench_size_bytes(s));
    bool network_only = false;
    const Scenario scenario = load_bench_scenario(args->source, network_only);
    std::vector<sim::Collective> collectives, p2p;
    for (const auto& c : args->collectives) {
      const sim::Collective collective = parse_collective(c);
      (collective == sim::Collective::p2p && !args->pair.empty() ? p2p : collectives).push_back(collective);
    }
    const int p = args->ranks > 0 ? args->ranks : network_only ? scenario.network.nodes : scenario.parallel.ranks();
    if (p < 2 || p > scenario.network.nodes)
      throw InputError("--ranks", "need 2.." + std::to_string(scenario.network.nodes) +
                                      " ranks on this network, got " + std::to_string(p));
    for (int node : args->pair)
      if (node < 0 || node >= scenario.network.nodes || args->pair[0] == args->pair[1])
        throw InputError("--pair", "need two different nodes in 0.." + std::to_string(scenario.network.nodes - 1));
    if (flags_only()) return;  // checked: nothing simulated
    std::vector<int> ranks(static_cast<size_t>(p));
    for (int i = 0; i < p; ++i) ranks[static_cast<size_t>(i)] = i;
    auto rows = sim::run_comm_bench(scenario.network, ranks, sizes_bytes, collectives);
    if (!p2p.empty()) {
      const auto pair_rows = sim::run_comm_bench(scenario.network, args->pair, sizes_bytes, p2p);
      rows.insert(rows.end(), pair_rows.begin(), pair_rows.end());
    }
    if (args->json) {
      std::cout << rows_json(scenario, rows).dump(1) << "\n";
      return;
    }
    std::cout << "# scenario " << scenario.name << " (" << scenario.source << "), " << p << " ranks\n";
    sim::print_comm_bench(std::cout, scenario.network, rows);
  });
}

}  // namespace lowband::cli
