// `lowband run [SCENARIO] [--set k=v]... [--out RUN_DIR] [--steps N]`: train the
// scenario's layout (context ranks, pipeline stages of them, data-parallel replicas
// of either) over simulated ranks and write a run directory
// (runtime/train/run.h); --steps N sets training.steps, as sweep --steps does.
// Exit status 3 when the loss diverges. Under mpirun (`mpirun -np P lowband run
// ...`) each process is one rank and rank 0 writes.
// `lowband run --resume RUN_DIR [SCENARIO | --builtin NAME] [--set k=v]...`:
// continue that run from its checkpoint.bin (runtime/train/checkpoint.h); a scenario
// given must equal RUN_DIR/scenario.json, and the training continues with the
// OpenMP thread count its checkpoint records (bit-identical numbers) unless
// --threads forces another (a warning says the numbers may then differ).
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "cli/commands.h"
#include "cli/rank_world.h"
#include "comm/mpi.h"
#include "common/error.h"
#include "runtime/scenario/equal.h"
#include "runtime/scenario/load.h"
#include "runtime/train/run.h"
#include "runtime/train/run_dir.h"

namespace lowband::cli {

namespace {

// "P = 4", "2 pipeline stages x 2 context ranks", "2 data-parallel replicas of
// 1 pipeline stages x 2 context ranks", or each replica's shape where they differ.
std::string layout_words(const ParallelConfig& p) {
  auto shape = [](int pipeline, int context) {
    return pipeline > 1 ? std::to_string(pipeline) + " pipeline stages x " + std::to_string(context) + " context ranks"
                        : "P = " + std::to_string(context);
  };
  const int replicas = p.replicas.empty() ? p.data : int(p.replicas.size());
  if (replicas < 2) return shape(p.pipeline, p.context);
  std::string out = std::to_string(replicas) + " data-parallel replicas (";
  for (int q = 0; q < replicas; ++q) {
    const bool given = !p.replicas.empty();
    out += (q ? "; " : "") + shape(given ? p.replicas[size_t(q)].pipeline : p.pipeline,
                                   given ? p.replicas[size_t(q)].context : p.context);
  }
  return out + ")";
}

struct RunArgs {
  ScenarioSource source;
  std::string out;
  int steps = -1;
  int threads = 0;  // 0: not given
  std::string resume;
  std::vector<std::string> also_time_on;  // scenario files timed on the same training
  std::string transport = "mpi";          // under mpirun: "mpi" or "nccl"
};

// The scenario of the run in RUN_DIR. One given (a file, --builtin, or only --set
// overrides applied to RUN_DIR/scenario.json) must resolve to the same scenario.
Scenario scenario_to_resume(const RunArgs& args) {
  if (!args.out.empty())
    throw InputError("--out", "not with --resume: the resumed run writes to its own directory " + args.resume);
  if (!std::filesystem::is_directory(args.resume)) throw InputError("--resume", "no run directory " + args.resume);
  const std::string recorded_file = args.resume + "/scenario.json";
  const bool named = !args.source.file.empty() || !args.source.builtin.empty();
  if (!std::filesystem::exists(recorded_file)) {
    // A run writes scenario.json with its first steps: this one stopped before them.
    if (named && train::empty_but_lock(args.resume)) return load_scenario(args.source);
    throw InputError("--resume", args.resume + " has no scenario.json: " +
                                     (train::empty_but_lock(args.resume)
                                          ? "the run stopped before its first step; start it with lowband run "
                                            "SCENARIO --out " + args.resume
                                          : std::string("not a run directory")));
  }
  const Scenario recorded = load_recorded_scenario_file(recorded_file);
  if (!named && args.source.sets.empty()) return recorded;
  const Scenario given = named ? load_scenario(args.source) : load_recorded_scenario_file(recorded_file, args.source.sets);
  const std::string diff = scenario_difference(recorded, given);
  if (!diff.empty())
    throw InputError("--resume", "the scenario given differs from the run's " + recorded_file + " at " + diff);
  return recorded;
}

// The --also-time-on scenarios (the run's --set overrides apply to each), with run
// directories beside --out, named after each scenario.
std::vector<train::RetimeTarget> retime_targets(const RunArgs& args) {
  std::vector<train::RetimeTarget> targets;
  for (const std::string& file : args.also_time_on) {
    train::RetimeTarget t{load_scenario_file(file, args.source.sets), ""};
    if (!args.out.empty())
      t.out_dir = (std::filesystem::path(args.out).parent_path() / t.scenario.name).string();
    targets.push_back(std::move(t));
  }
  return targets;
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run", "train the scenario's model over its layout's ranks (context, pipeline stages, data-parallel "
             "replicas), replay each step on its network, "
             "and write a run directory (scenario.json, steps.jsonl, curve.csv, summary.json, checkpoint.bin)");
  add_scenario_options(cmd, args->source);
  cmd->add_option("--out", args->out, "run directory (default runs/<scenario name>-<UTC timestamp>)");
  cmd->add_option("--steps", args->steps,
                  "training steps: sets training.steps (the learning-rate schedule's length and scenario.json's, as "
                  "sweep --steps does); with --resume it must equal the run's");
  cmd->add_option("--resume", args->resume,
                  "continue the run in this directory from its last checkpoint (training.checkpoint_every); "
                  "a scenario given must equal its scenario.json");
  cmd->add_option("--threads", args->threads,
                  "OpenMP threads, at most 4 x the cores (default OMP_NUM_THREADS, else one per core); with --resume the default is the "
                  "count the run was trained with (its checkpoint records it), and another count given here may "
                  "change the numbers in their last digits");
  cmd->add_option("--also-time-on", args->also_time_on,
                  "another scenario file that trains identically (only name, network and projection may differ): "
                  "the same training is also timed on it, in its own run directory (beside --out, named after it; "
                  "the --set overrides apply to it too). Repeatable");
  cmd->add_option("--transport", args->transport,
                  "under mpirun, what carries the collectives between the processes: mpi (default), or nccl "
                  "(one GPU per process; point-to-point messages still over MPI)")
      ->check(CLI::IsMember({"mpi", "nccl"}));
  cmd->callback([args, cmd] {
    // The flags first: a bad one is the only line on stderr (no note about the default scenario).
    if (cmd->count("--steps") && (args->steps < 1 || args->steps > (1 << 30)))
      throw InputError("--steps", "must be 1..1073741824, got " + std::to_string(args->steps));
    if (cmd->count("--threads")) check_count_here("--threads", args->threads, "OpenMP threads");
    const bool resume = !args->resume.empty();
    // --steps N is training.steps = N, as for sweep: the schedule spans the N steps and
    // scenario.json says N. A resumed run's count is its own (run_plan checks --steps).
    if (cmd->count("--steps") && !resume) args->source.sets.push_back("training.steps=" + std::to_string(args->steps));
    const Scenario scenario = resume ? scenario_to_resume(*args) : load_scenario(args->source);
    train::RunOptions options;
    options.out_dir = resume ? args->resume : args->out;
    options.steps = resume ? args->steps : -1;
    options.resume = resume;
    options.threads = args->threads;
    options.threads_forced = args->threads > 0;
    options.log = &std::cout;
    options.warnings = &std::cerr;
    if (resume && !args->also_time_on.empty())
      throw InputError("--also-time-on", "not with --resume: the checkpoint remembers the run's timing targets");
    options.also_timed_on = retime_targets(*args);
    const bool under_mpirun = comm::launched_by_mpirun();
    if (!under_mpirun && cmd->count("--transport"))
      throw InputError("--transport", "only under mpirun: mpirun -np P lowband run --transport " + args->transport);
    if (flags_only()) return;  // checked: no MPI session, no training, nothing written
    // Under mpirun: one rank per process; rank 0 writes and prints.
    std::optional<comm::MpiSession> mpi;
    std::unique_ptr<comm::Communicator> world;
    if (under_mpirun) {
      mpi.emplace();
      world = rank_world(args->transport, scenario.parallel.all_reduce);
      options.comm = world.get();
    }
    const bool quiet = world && world->rank() != 0;
    if (quiet) options.log = nullptr, options.warnings = nullptr;
    std::ostringstream discard;
    std::ostream& out = quiet ? discard : std::cout;
    out << "scenario " << scenario.name << " (" << scenario.source << "): " << scenario.model.layers
        << " layers, d_model " << scenario.model.d_model << ", seq_len " << scenario.model.seq_len
        << ", " << layout_words(scenario.parallel) << ", backend " << scenario.training.backend
        << (world ? " (one rank per MPI process; " + args->transport + " collectives)" : "") << "\n";
    // One rank failing alone would leave the others waiting: it ends the job, from
    // inside a step while the trainer's buffers still exist (deferred collectives
    // may be using them), or here for what fails outside the steps.
    auto end_job = [&](const std::exception& e) {
      const bool input = dynamic_cast<const InputError*>(&e) != nullptr;
      std::cerr << "lowband: error (MPI rank " << world->rank() << "): " << e.what() << std::endl;
      comm::abort_job(input ? 2 : 1);
    };
    if (world && world->size() > 1) options.on_step_error = end_job;
    const train::RunResult r = [&] {
      if (!world || world->size() < 2) return train::run_training(scenario, options);
      try {
        return train::run_training(scenario, options);
      } catch (const std::exception& e) {
        end_job(e);
        throw;  // (end_job does not return)
      }
    }();
    out << "run directory: " << r.run_dir << "\n";
    for (const auto& t : r.retimed) out << "also timed in: " << t.run_dir << " (simulated " << t.sim_total_seconds << " s)\n";
    if (r.already_complete)
      out << "the run had already ended (" << r.steps_done << " steps" << (r.diverged ? ", diverged" : "")
          << "): nothing to resume\n";
    if (r.diverged)
      throw CommandFailed(r.message + " (run directory " + r.run_dir + " is complete up to it)", 3);
    out << "final train loss " << r.final_train_loss;
    if (r.final_val_loss) out << ", validation loss " << *r.final_val_loss;
    out << "; simulated " << r.sim_total_seconds << " s";
    if (r.summary.contains("sim_lost_seconds"))  // network.dynamics
      out << " (" << r.summary["sim_lost_seconds"].get<double>() << " s beyond the nominal network"
          << (r.summary.contains("sim_restarts")  // network.restart
                  ? ", " + std::to_string(r.summary["sim_restarts"].get<int>()) + " restarts from a checkpoint"
                  : std::string())
          << ")";
    out << "; harness overhead "
              << 100.0 * r.harness_overhead_fraction << " % of step time\n";
  });
}

}  // namespace lowband::cli
