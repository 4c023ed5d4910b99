// `lowband sweep [SCENARIO] [--set k=v1,v2,...]... [--out SWEEP_DIR] [--jobs N]
// [--threads N] [--steps N] [--seeds N] [--dry-run]` and `lowband sweep --resume SWEEP_DIR`:
// run a grid of scenarios (runtime/sweep/), training once per distinct numerics,
// and write one run directory per point plus SWEEP_DIR/index.json. Exit status 3
// when any point failed (the others still ran). The hidden `sweep-worker`
// subcommand is one training of a sweep, started by the sweep itself.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "runtime/scenario/load.h"
#include "runtime/scenario/grid.h"
#include "runtime/sweep/runner.h"
#include "runtime/sweep/slurm.h"
#include "runtime/sweep/status.h"
#include "runtime/sweep/worker.h"
#include "runtime/train/run.h"
#include "runtime/train/run_dir.h"

namespace lowband::cli {

namespace {

namespace fs = std::filesystem;

struct SweepArgs {
  ScenarioSource source;
  std::string out, resume, status;
  int jobs = 0, threads = 0, steps = 0, seeds = 0, training = 0;
  bool dry_run = false;
  std::string launcher = "local";
  sweep::SlurmOptions slurm;
};


// The program itself, started again for each training (runtime/sweep/worker.h).
std::string self_executable() {
  std::string path(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (n <= 0) throw std::runtime_error("cannot find this program's path (/proc/self/exe)");
  path.resize(size_t(n));
  return path;
}

void print_plan(const grid::SweepPlan& plan) {
  std::cout << "sweep " << plan.base_name << " (" << plan.spec.source << "): " << plan.points.size() << " points, "
            << plan.groups.size() << " trainings\n";
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    std::cout << "  training " << g + 1 << ": " << plan.points[plan.groups[g].front()].name;
    if (plan.groups[g].size() > 1) std::cout << ", also timed on";
    for (size_t k = 1; k < plan.groups[g].size(); ++k) std::cout << " " << plan.points[plan.groups[g][k]].name;
    std::cout << "\n";
  }
  for (const auto& p : plan.points)
    std::cout << "  point " << p.name << ": " << grid::describe_settings(p.settings) << "\n";
}

// --launcher slurm: the sweep directory written, its trainings submitted as one job array.
void submit_sweep(const grid::SweepPlan& plan, const SweepArgs& a, const std::string& out) {
  sweep::SlurmOptions so = a.slurm;
  so.at_once = a.jobs;
  so.cpus_per_task = a.threads > 0 ? a.threads : 1;
  for (const grid::SweepPoint& p : plan.points) so.gpu = so.gpu || p.scenario.training.backend == "cuda";
  const std::string dir = fs::absolute(out).lexically_normal().string(), exe = self_executable();
  const std::string workdir = fs::current_path().string();
  if (a.dry_run) {  // every training, as a first submission asks for them
    std::vector<int> all;
    for (size_t g = 0; g < plan.groups.size(); ++g) all.push_back(int(g) + 1);
    std::cout << sweep::slurm_script(exe, dir, workdir, plan.base_name, all, so);
    return;
  }
  if (flags_only()) return;  // checked: sbatch not run, nothing written
  sweep::require_sbatch();
  sweep::SweepOptions options;
  options.out_dir = out;
  options.prepare_only = true;
  const sweep::SweepResult r = sweep::run_sweep(plan, options);
  if (r.todo.empty()) {
    std::cout << "sweep " << out << ": every training is done; nothing submitted\n";
    return;
  }
  const fs::path slurm_dir = fs::path(dir) / "slurm";
  fs::create_directories(slurm_dir);
  const std::string script = (slurm_dir / "array.sbatch").string();
  write_file_atomically(script, sweep::slurm_script(exe, dir, workdir, plan.base_name, r.todo, so));
  const std::string job = sweep::submit_to_slurm(script);
  std::ofstream((slurm_dir / "jobs").string(), std::ios::app) << job << " " << sweep::array_list(r.todo) << "\n";
  std::cout << "submitted job array " << job << ": trainings " << sweep::array_list(r.todo) << " of "
            << plan.groups.size();
  if (so.at_once > 0) std::cout << ", " << so.at_once << " at once";
  std::cout << " (" << script << ")\nwhere it stands: lowband sweep --status " << out << "\n";
}

void run_sweep_command(const SweepArgs& a, const CLI::App& cmd) {
  const bool slurm = a.launcher == "slurm";
  const std::vector<std::pair<const char*, std::vector<std::string>>> sbatch_options = {
      {"--sbatch-time", {a.slurm.time}}, {"--sbatch-mem", {a.slurm.mem}}, {"--partition", {a.slurm.partition}},
      {"--account", {a.slurm.account}}, {"--sbatch", a.slurm.extra}};
  for (const auto& [flag, values] : sbatch_options) {
    if (cmd.count(flag) && !slurm) throw InputError(flag, "is an sbatch option: only with --launcher slurm");
    // Each goes on a #SBATCH line of the script: a line break would start a line of shell.
    for (const std::string& value : values)
      if (value.find_first_of("\r\n") != std::string::npos) throw InputError(flag, "must be one line");
  }
  if (cmd.count("--training") && (a.resume.empty() || slurm))
    throw InputError("--training", "trains one training of the sweep in --resume DIR (what a cluster's array task "
                                   "runs), not with --launcher");
  if (cmd.count("--training") && (cmd.count("--jobs") || a.dry_run))
    throw InputError("--training", "is one training: no --jobs or --dry-run");
  if (cmd.count("--jobs")) check_count_here("--jobs", a.jobs, "trainings at once");
  if (cmd.count("--threads")) check_count_here("--threads", a.threads, "OpenMP threads per training");
  if (cmd.count("--steps") && a.steps < 1) throw InputError("--steps", "must be at least 1");
  if (!a.status.empty()) {
    if (!a.source.file.empty() || !a.source.builtin.empty() || !a.source.sets.empty() || !a.resume.empty() ||
        !a.out.empty() || cmd.count("--steps") || cmd.count("--seeds") || cmd.count("--jobs") ||
        cmd.count("--threads") || cmd.count("--training") || cmd.count("--launcher") || a.dry_run)
      throw InputError("--status", "reads a sweep directory and takes no other flag or scenario");
    const sweep::SweepStatus status = sweep::read_sweep_status(a.status);
    if (flags_only()) return;
    std::cout << sweep::format_sweep_status(status);
    return;
  }
  std::string text, source, out = a.out;
  std::vector<std::string> sets = a.source.sets;
  if (!a.resume.empty()) {
    if (!a.source.file.empty() || !a.source.builtin.empty() || !sets.empty() || cmd.count("--steps") ||
        cmd.count("--seeds") || !a.out.empty())
      throw InputError("--resume", "takes no SCENARIO, --builtin, --set, --steps, --seeds or --out: the sweep is " + a.resume +
                                       "/sweep.json (to change it, run lowband sweep FILE --out " + a.resume + ")");
    source = (fs::path(a.resume) / "sweep.json").string();
    if (!fs::is_regular_file(source)) throw InputError("--resume", a.resume + " is not a sweep directory (no sweep.json)");
    text = read_scenario_text(source);
    out = a.resume;
  } else {
    const ScenarioText base = scenario_text(a.source);  // as estimate reads a grid
    text = base.text, source = base.source;
  }
  if (cmd.count("--steps")) sets.push_back("training.steps=" + std::to_string(a.steps));
  grid::SweepSpec spec = grid::make_spec(text, source, sets);
  if (cmd.count("--seeds")) grid::add_seed_axis(spec, a.seeds);
  const grid::SweepPlan plan = grid::plan_sweep(spec);
  if (a.training > int(plan.groups.size()) || (cmd.count("--training") && a.training < 1))
    throw InputError("--training", "the sweep has trainings 1 to " + std::to_string(plan.groups.size()) + ", got " +
                                       std::to_string(a.training));
  if (a.dry_run && !slurm) {
    print_plan(plan);
    return;
  }
  if (out.empty()) out = train::default_run_dir(plan.base_name + "-sweep");
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec)) throw InputError("--out", out + " is not a directory");
  if (fs::is_directory(out, ec) && !train::empty_but_lock(out) && !fs::exists(fs::path(out) / "index.json", ec))
    throw InputError("--out", out + " exists and is not a sweep directory (no index.json): give a new or empty one");
  if (slurm) return submit_sweep(plan, a, out);
  if (flags_only()) return;  // checked: no worker started, nothing written

  sweep::SweepOptions options;
  options.only_training = a.training;
  options.out_dir = out;
  options.jobs = a.jobs;
  options.threads = a.threads;
  options.worker_exe = self_executable();
  options.log = &std::cout;
  const sweep::SweepResult r = sweep::run_sweep(plan, options);
  std::cout << "\n" << sweep::summary_table(plan, r.states, out) << "\nsweep directory: " << out << " (index.json)\n";
  if (r.failed > 0)
    throw CommandFailed(std::to_string(r.failed) + " of " + std::to_string(plan.points.size()) +
                            " points failed (see " + out + "/index.json); the others are done",
                        3);
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "run a grid of scenarios (--set KEY=V1,V2,... or the file's \"sweep\" section), training once per "
               "distinct numerics and timing it on every network; one run directory per point and index.json");
  add_scenario_options(cmd, args->source);
  cmd->get_option("--set")->description(
      "override a key; a value with top-level commas is an axis of the grid, e.g. "
      "--set network.bandwidth=80Mbps,1Gbps (repeatable)");
  cmd->add_option("--out", args->out, "sweep directory (default runs/<scenario name>-sweep-<UTC timestamp>); "
                                      "points already done there are skipped");
  cmd->add_option("--resume", args->resume, "finish the sweep in this directory (reads its sweep.json)");
  cmd->add_option("--jobs", args->jobs, "trainings at once, at most 4 x the cores (default: as many as fit, one per core)");
  cmd->add_option("--threads", args->threads,
                  "OpenMP threads per training, at most 4 x the cores (default OMP_NUM_THREADS, else cores / jobs); a training resumed "
                  "from its checkpoint keeps the count it was trained with unless this is given (its numbers may "
                  "then change in their last digits)");
  cmd->add_option("--steps", args->steps, "training steps of every point (sets training.steps)");
  cmd->add_option("--seeds", args->seeds,
                  "run every point with N seeds: training.seed s, s+1, ..., s+N-1 from the scenario's seed s "
                  "(an innermost axis; lowband report gives each arm's mean and interval over them)");
  cmd->add_flag("--dry-run", args->dry_run,
                "validate every point and list the points and trainings (with --launcher slurm: print the batch "
                "script); run nothing");
  cmd->add_option("--training", args->training,
                  "with --resume DIR: train only training N (1-based, as --dry-run lists them) and the networks it "
                  "is timed on, beside other processes training the others: what a cluster's array task runs");
  cmd->add_option("--launcher", args->launcher,
                  "local (default): the trainings on this machine, --jobs at a time; slurm: write the sweep directory "
                  "(on a shared file system) and submit one Slurm job array, one task per training still to run "
                  "(--jobs: tasks at once; --threads: CPUs per task)")
      ->check(CLI::IsMember({"local", "slurm"}));
  cmd->add_option("--sbatch-time", args->slurm.time, "with --launcher slurm: sbatch --time of each training (e.g. 4:00:00)");
  cmd->add_option("--sbatch-mem", args->slurm.mem, "with --launcher slurm: sbatch --mem of each training (e.g. 16G)");
  cmd->add_option("--partition", args->slurm.partition, "with --launcher slurm: the Slurm partition");
  cmd->add_option("--account", args->slurm.account, "with --launcher slurm: the Slurm account");
  cmd->add_option("--sbatch", args->slurm.extra,
                  "with --launcher slurm: one more sbatch option, as sbatch reads it (e.g. --sbatch=--qos=long; repeatable)");
  cmd->add_option("--status", args->status,
                  "where the sweep in this directory stands, from the directory alone: each point done, running "
                  "(step k/N), failed (why, its log), stopped (resumable) or waiting; runs nothing");
  cmd->callback([args, cmd] { run_sweep_command(*args, *cmd); });

  auto group_file = std::make_shared<std::string>();
  auto parent_pid = std::make_shared<int>(0);
  CLI::App* worker = app.add_subcommand("sweep-worker", "one training of a sweep (started by lowband sweep)");
  worker->group("");  // hidden from --help
  worker->add_option("GROUP_FILE", *group_file)->required();
  worker->add_option("--parent-pid", *parent_pid, "the sweep that started this worker: it dies with it");
  worker->callback([group_file, parent_pid] {
    if (flags_only()) return;  // its one argument is a file the sweep wrote: nothing to check
    if (*parent_pid > 0) sweep::die_with_parent(*parent_pid);
    const int status = sweep::run_group_worker(*group_file);
    if (status != 0) throw CommandFailed("sweep worker: the training failed (" + sweep::result_path(*group_file) + ")", status);
  });
}

}  // namespace lowband::cli
