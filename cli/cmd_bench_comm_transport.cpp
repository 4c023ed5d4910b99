#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/bench_comm_transport.h"
#include "cli/commands.h"
#include "cli/rank_world.h"
#include "comm/bench.h"
#include "comm/in_process.h"
#include "comm/mpi.h"
#include "common/error.h"
#include "runtime/scenario/units.h"

namespace lowband::cli {

namespace {

struct Plan {
  std::vector<int64_t> counts;  // f32 elements per row size
  std::vector<comm::Collective> collectives;
  int iters = 0;
  bool per_call = false;
};

Plan make_plan(const TransportBenchArgs& args) {
  Plan plan;
  const std::vector<std::string> sizes =
      args.sizes.empty() ? std::vector<std::string>{"1KB", "64KB", "1MB", "16MB", "256MB"} : args.sizes;
  for (const auto& s : sizes) {
    const double bytes = bench_size_bytes(s);
    const double elements = bytes / static_cast<double>(comm::dtype_bytes(comm::DType::f32));
    if (elements < 1) throw InputError("--sizes", "\"" + s + "\" is less than one float32 (4B)");
    plan.counts.push_back(static_cast<int64_t>(elements));
  }
  const std::vector<comm::Collective> known = {comm::Collective::all_reduce, comm::Collective::all_gather,
                                               comm::Collective::reduce_scatter, comm::Collective::broadcast};
  if (args.collectives.empty()) plan.collectives = known;
  for (const auto& name : args.collectives) {
    auto it = std::find_if(known.begin(), known.end(), [&](comm::Collective c) { return name == comm::to_string(c); });
    if (it == known.end())
      throw InputError("--collectives", "\"" + name + "\" is not measured on --transport " + args.transport +
                                            " (expected all_reduce, all_gather, reduce_scatter, broadcast)");
    plan.collectives.push_back(*it);
  }
  if (args.iters < 0) throw InputError("--iters", "must be >= 0 (0: about 0.2 s of calls per row)");
  plan.iters = args.iters;
  plan.per_call = args.per_call;
  return plan;
}

// Every rank runs every row; `print` is true on the rank that prints.
int64_t run_rows(comm::Communicator& comm, const Plan& plan, bool print) {
  int64_t wrong = 0;
  if (print) comm::print_bench_header(std::cout);
  for (int64_t count : plan.counts)
    for (comm::Collective c : plan.collectives) {
      const comm::BenchRow row = comm::bench_collective(comm, c, count, comm::DType::f32, 2, plan.iters);
      wrong += row.wrong;
      if (print) {
        comm::print_bench_row(std::cout, row);
        if (plan.per_call) comm::print_bench_calls(std::cout, row);
        std::cout.flush();
      }
    }
  if (print) std::cout << "# #wrong in all: " << wrong << "\n";
  return wrong;
}

}  // namespace

double bench_size_bytes(const std::string& text) {
  const double bytes = units::parse_bytes(text, "--sizes");
  if (!(bytes > 0)) throw InputError("--sizes", "\"" + text + "\": a buffer size must be above 0");
  return bytes;
}

void run_transport_bench(const TransportBenchArgs& args, const std::function<int()>& scenario_ranks) {
  const Plan plan = make_plan(args);
  int64_t wrong = 0;
  if (args.transport == "in-process") {
    const int p = args.ranks > 0 ? args.ranks : scenario_ranks();
    if (args.ranks > 0) check_count_here("--ranks", p, "in-process ranks, one thread each");
    if (p > max_threads_here())
      throw InputError("--ranks", "the scenario's " + std::to_string(p) + " ranks are more in-process threads than 4 x "
                                  "this machine's cores (" + std::to_string(max_threads_here()) + "): give --ranks N");
    if (flags_only()) return;  // checked: no threads started
    std::cout << "# transport in-process: " << p
              << " ranks as threads of one process, free-running (no baton); float32; time: each call started together, the slowest rank's, mean over the calls\n";
    comm::InProcessWorld world(p, /*baton=*/false);
    world.run([&](comm::Communicator& c) {
      const int64_t w = run_rows(c, plan, c.rank() == 0);
      if (c.rank() == 0) wrong = w;
    });
  } else if (args.transport == "mpi" || args.transport == "nccl") {
    if (!comm::launched_by_mpirun())
      throw InputError("--transport", args.transport + ": start it with mpirun -np P lowband bench-comm --transport " +
                                          args.transport);
    if (flags_only()) return;  // the rest needs the MPI world
    comm::MpiSession session;
    {
      const std::unique_ptr<comm::Communicator> world = rank_world(args.transport);
      if (args.ranks > 0 && args.ranks != world->size())
        throw InputError("--ranks", std::to_string(args.ranks) + " but mpirun started " +
                                        std::to_string(world->size()) + " processes");
      if (world->rank() == 0)
        std::cout << "# transport " << args.transport << ": " << world->size() << " processes ("
                  << world->describe() << "); float32, host buffers; time: each call started together, the slowest rank's, mean over the calls\n";
      wrong = run_rows(*world, plan, world->rank() == 0);
    }
  } else {
    throw InputError("--transport",
                     "unknown transport \"" + args.transport + "\" (simulated, in-process, mpi, nccl)");
  }
  if (wrong > 0) throw CommandFailed("bench-comm: " + std::to_string(wrong) + " wrong elements (a communicator bug)", 1);
}

}  // namespace lowband::cli
