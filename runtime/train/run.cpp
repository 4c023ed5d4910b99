#include "runtime/train/run.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <memory>
#include <ostream>
#include <sstream>

#include "common/atomic_file.h"
#include "common/error.h"
#include "runtime/compress/make_codec.h"
#include "runtime/data/batch.h"
#include "runtime/parallel/context_schedule.h"
#include "runtime/parallel/layout.h"
#include "runtime/data/dataset.h"
#include "runtime/scenario/equal.h"
#include "runtime/scenario/load.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/memory_check.h"
#include "runtime/train/projection.h"
#include "runtime/train/run_dir.h"
#include "runtime/train/run_files.h"
#include "sim/replay.h"

namespace lowband::train {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string hms(double seconds) {
  const long s = long(std::max(0.0, seconds) + 0.5);
  std::ostringstream out;
  out << s / 3600 << ":" << std::setw(2) << std::setfill('0') << (s / 60) % 60 << ":" << std::setw(2)
      << std::setfill('0') << s % 60;
  return out.str();
}

// The replays: every step's graph with measured timing; with profile timing
// the graph repeats, so one replay per distinct graph (keyed by sync and bytes).
class Replayer {
 public:
  Replayer(const sim::NetworkSpec& network, bool cache) : network_(network), cache_(cache) {}

  std::vector<sim::ReplayResult> replay(const std::vector<const sim::StepGraph*>& graphs) {
    if (!cache_) results_.clear();
    std::vector<std::string> keys(graphs.size()), todo_keys;
    std::vector<sim::StepGraph> todo;
    for (size_t i = 0; i < graphs.size(); ++i) {
      keys[i] = cache_ ? key(*graphs[i]) : std::to_string(i);
      if (!results_.count(keys[i]) && std::find(todo_keys.begin(), todo_keys.end(), keys[i]) == todo_keys.end()) {
        todo.push_back(*graphs[i]);
        todo_keys.push_back(keys[i]);
      }
    }
    if (!todo.empty()) {
      const auto t0 = Clock::now();
      // Cached (profile timing): each graph replayed alone, from SimGrid's clock 0. In a
      // batch a graph starts at a later clock and its durations round differently in the
      // last bits, so which batch first met it (flush timing, a resume) would show.
      std::vector<sim::ReplayResult> fresh;
      if (cache_)
        for (const auto& g : todo) fresh.push_back(sim::replay(network_, g));
      else
        fresh = sim::replay_batch(network_, todo);
      wall_seconds += since(t0);
      for (size_t j = 0; j < fresh.size(); ++j) results_[todo_keys[j]] = fresh[j];
    }
    std::vector<sim::ReplayResult> out;
    for (const auto& k : keys) out.push_back(results_.at(k));
    return out;
  }

  double wall_seconds = 0;

 private:
  static std::string key(const sim::StepGraph& g) {
    std::ostringstream k;
    k << g.tasks().size();
    for (const auto& t : g.tasks())
      if (t.kind == sim::TaskKind::transfer) k << "," << t.bytes;
    return k.str();
  }
  const sim::NetworkSpec& network_;
  bool cache_;
  std::map<std::string, sim::ReplayResult> results_;
};

}  // namespace

parallel::ComputeTiming compute_timing(const Scenario& s) {
  if (s.devices.timing == DeviceTiming::measured) return parallel::ComputeTiming::measured;
  if (s.devices.timing == DeviceTiming::profile) return parallel::ComputeTiming::profile;
  // "auto" measures only what it simulates: ranks modelled as this machine's CPU,
  // trained on the CPU. A GPU-trained run takes the profile's seconds.
  if (s.training.backend != "cpu") return parallel::ComputeTiming::profile;
  bool all_cpu = s.devices.default_profile.name == "cpu";
  for (const auto& [node, profile] : s.devices.node_profiles)
    if (node < s.parallel.ranks() && profile.name != "cpu") all_cpu = false;
  return all_cpu ? parallel::ComputeTiming::measured : parallel::ComputeTiming::profile;
}

std::string default_run_dir(const std::string& scenario_name) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  const std::string base = "runs/" + (scenario_name.empty() ? std::string("run") : scenario_name) + "-" + stamp;
  std::string dir = base;
  for (int i = 2; std::filesystem::exists(dir); ++i) dir = base + "-" + std::to_string(i);
  return dir;
}

namespace {

// Whether the codec shrank this step's messages (false in a MoS warm-up).
bool compressed(const parallel::StepRecord& record, const parallel::CompressedTraffic& traffic) {
  return traffic.sent(record.graph) < 0.999 * traffic.uncompressed_bytes_per_step;
}

// One network the training is timed on: its run directory, running totals and
// replays — or, with Scenario::projection, the projected scenario's step times.
struct Target {
  Target(const Scenario& s, const std::string& out_dir, bool cache_replays, bool writer)
      : scenario(s), files(out_dir, writer), replayer(scenario.network, cache_replays) {
    if (scenario.projection.scenario) projection.emplace(*scenario.projection.scenario);
  }
  Scenario scenario;
  RunFiles files;
  RunTotals totals;
  Replayer replayer;
  std::optional<StepTimeProjection> projection;
};

// A retime target must train exactly like the trained scenario: only what times
// it (network, projection) and its name may differ.
void check_retime_target(const Scenario& trained, const Scenario& target, size_t index) {
  const std::string diff = training_difference(trained, target);
  if (!diff.empty())
    throw InputError("retime target " + std::to_string(index) + " (" + target.name + ")",
                     "differs from the trained scenario in more than its network and projection: " + diff);
}

// Sets the OpenMP thread count for the training and restores the caller's on return.
class ThreadCount {
 public:
  explicit ThreadCount(int threads) : before_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~ThreadCount() { omp_set_num_threads(before_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int before_;
};

}  // namespace

RunResult run_training(const Scenario& scenario, const RunOptions& given_options) {
  check_training_fits(scenario);  // before anything is allocated or written
  RunOptions options = given_options;
  if (options.out_dir.empty() && !options.resume) options.out_dir = default_run_dir(scenario.name);
  const bool writer = !options.comm || options.comm->rank() == 0;  // MPI: rank 0 alone writes
  // One writer per directory (run_dir.h), from before its checkpoint is read.
  std::vector<DirLock> locks;
  const auto lock = [&](const std::string& dir, const std::string& place, bool create) {
    if (!writer) return;
    locks.emplace_back(dir, place, create);
    remove_stale_temp_files(dir);
  };
  lock(options.out_dir, options.resume ? "--resume" : "--out", !options.resume);
  // A resumed run's checkpoint is read and checked before anything is built or written.
  std::optional<Checkpoint> resumed;
  if (options.resume) resumed = checkpoint_to_resume(options.out_dir, scenario);
  if (options.resume && !resumed && options.log)
    *options.log << options.out_dir << " has no checkpoint yet: training it from step 0\n";
  const int recorded_steps = resumed ? resumed->targets.front().totals.steps_planned : -1;
  if (resumed && options.steps >= 0 && options.steps != recorded_steps)
    throw InputError("--steps", "the run being resumed has " + std::to_string(recorded_steps) + " steps, got " +
                                    std::to_string(options.steps));
  const int steps = options.steps >= 0 ? options.steps : resumed ? recorded_steps : scenario.training.steps;
  if (steps < 1) throw InputError(options.steps >= 0 ? "--steps" : "training.steps", "must be at least 1");
  std::vector<RetimeTarget> retimes =
      resumed ? retime_targets_to_resume(*resumed, options.also_timed_on, options.out_dir) : options.also_timed_on;
  for (size_t i = 0; i < retimes.size(); ++i) check_retime_target(scenario, retimes[i].scenario, i);
  for (RetimeTarget& t : retimes) {
    if (t.out_dir.empty()) t.out_dir = default_run_dir(t.scenario.name);
    lock(t.out_dir, "--also-time-on", true);
  }
  if (!resumed)
    for (const DirLock& held : locks) check_restartable(held.dir(), held.dir() == options.out_dir ? "--out" : "--also-time-on");
  if (resumed && resumed->complete) return completed_run_result(*resumed, options.out_dir);
  if (options.threads < 0) throw InputError("--threads", "must be at least 1");
  // Before any kernel runs: a resumed run takes the count its checkpoint records.
  int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  std::string threads_message;
  bool threads_warning = false;
  if (resumed) {
    const ResumeThreads r = resume_threads(resumed->omp_threads, threads, options.threads_forced);
    threads = r.threads;
    threads_message = r.message;
    threads_warning = r.warning;
  }
  const ThreadCount thread_count(threads);
  const int start_step = resumed ? resumed->steps_done : 0;
  const parallel::ComputeTiming timing = compute_timing(scenario);
  std::unique_ptr<parallel::Trainer> trainer_owned = parallel::make_trainer(scenario, timing, options.comm);
  parallel::Trainer& trainer = *trainer_owned;
  std::ostream* const log = writer ? options.log : nullptr;
  if (resumed) restore_trainer(trainer, *resumed, options.out_dir);

  const data::Dataset dataset = data::load_training_dataset(scenario);
  if (dataset.vocab_size > scenario.model.vocab)
    throw InputError("model.vocab", "the " + dataset.tokenizer + " tokenizer needs vocab >= " +
                                        std::to_string(dataset.vocab_size));
  if (log) *log << dataset.describe() << "\n";
  const data::SplitTokens split = data::split_tokens(dataset.tokens, scenario.training.validation_fraction);
  const data::BatchShape shape{scenario.model.seq_len, scenario.training.batch_size};
  std::vector<data::Batch> val_batches;
  if (split.validation.size() > size_t(shape.seq_len) + 1)
    val_batches = data::validation_batches(split.validation, shape,
                                           int64_t(scenario.training.eval_batches) * shape.batch_size);

  // The trained run first, then the retime targets; with profile timing the
  // graphs repeat, so each target replays every distinct graph once.
  const bool cache_replays = timing == parallel::ComputeTiming::profile;
  std::vector<std::unique_ptr<Target>> targets;
  targets.push_back(std::make_unique<Target>(scenario, options.out_dir, cache_replays, writer));
  for (const RetimeTarget& t : retimes)
    targets.push_back(std::make_unique<Target>(t.scenario, t.out_dir, cache_replays, writer));
  if (resumed && writer) {
    std::vector<std::string> dirs;
    for (const auto& t : targets) dirs.push_back(t->files.dir());
    truncate_steps_files(dirs, *resumed);  // lines after the checkpoint are trained again
  }
  const parallel::CompressedTraffic traffic = trainer.compressed_traffic();
  for (size_t index = 0; index < targets.size(); ++index) {
    Target* t = targets[index].get();
    RunTotals& totals = t->totals;
    const int relay_node = parallel::Layout(t->scenario.parallel).relay_node();
    totals.steps_planned = steps;
    totals.tokens_per_step =
        t->projection ? t->projection->tokens_per_step() : double(shape.batch_size) * double(shape.seq_len);
    totals.traffic = traffic;
    totals.relay_node = relay_node;
    totals.uncompressed_kv_bytes_per_step = traffic.uncompressed_bytes_per_step;
    totals.header = {{"scenario", t->scenario.name},
                     {"scenario_source", t->scenario.source},
                     {"run_dir", t->files.dir()},
                     {"network", sim::describe(t->scenario.network)},
                     {"network_model", sim::to_string(t->scenario.network.model)},
                     {"codec", traffic.codec},
                     {"data", dataset.describe()},
                     {"ranks", trainer.ranks()},
                     {"compute_timing", timing == parallel::ComputeTiming::measured ? "measured" : "profile"}};
    if (index > 0) totals.header["trained_in"] = targets.front()->files.dir();
    if (t->projection) totals.header["time_projection"] = t->projection->describe();
    if (resumed) {  // the totals as they were at the checkpoint
      totals = resumed->targets[index].totals;
      totals.traffic = traffic;
      totals.relay_node = relay_node;
      totals.header["run_dir"] = t->files.dir();
      t->replayer.wall_seconds = totals.replay_wall_seconds;
    }
  }
  // The run's files, valid from then on even if a step throws. A fresh run writes
  // them with its first steps: one that cannot start leaves nothing behind.
  bool files_started = false;
  auto start_files = [&] {
    for (auto& t : targets) {
      if (!resumed) t->files.remove_steps();  // of a run that stopped before its first checkpoint
      t->files.write_scenario(to_json(t->scenario).dump(2) + "\n");
      t->files.write_curve(t->totals.curve_csv);
      t->files.write_summary(t->totals.summary_json());
    }
    files_started = true;
  };
  if (resumed) start_files();
  RunTotals& main_totals = targets.front()->totals;

  std::vector<PendingStep> pending;
  const auto t_start = Clock::now();
  auto last_flush = Clock::now();
  RunResult result;
  result.run_dir = targets.front()->files.dir();
  result.resumed_at_step = start_step;
  result.threads = threads;
  if (log && resumed)
    *log << "resuming " << result.run_dir << " at step " << start_step << "/" << steps << " (" << kCheckpointFile
                 << ") with " << threads << " OpenMP thread" << (threads == 1 ? "" : "s") << "\n";
  if (!threads_message.empty()) {
    std::ostream* out = !writer ? nullptr : threads_warning && options.warnings ? options.warnings : log;
    if (out) *out << (threads_warning ? "warning: " : "") << threads_message << "\n" << std::flush;
  }
  const std::string scenario_json = to_json(scenario).dump();
  auto take_checkpoint = [&](bool complete) {  // right after a flush: nothing pending
    if (scenario.training.checkpoint_every <= 0) return;
    Checkpoint c;
    c.scenario_json = scenario_json;
    c.steps_done = main_totals.steps_done;
    c.complete = complete;
    c.omp_threads = threads;
    if (!complete) {
      std::ostringstream state;
      trainer.save_state(state);
      c.trainer_state = state.str();
    }
    for (const auto& t : targets)
      c.targets.push_back({std::filesystem::absolute(t->files.dir()).string(), to_json(t->scenario).dump(), t->totals,
                           steps_file_bytes(t->files.dir())});
    if (writer) write_checkpoint(targets.front()->files.dir(), c);
  };

  auto evaluate = [&](PendingStep& p) {
    if (val_batches.empty()) return;
    double sum = 0, weight = 0;
    std::vector<double> per_replica;
    for (const auto& b : val_batches) {
      const int seqs = b.shape.batch_size;
      sum += double(trainer.evaluate(b.inputs.data(), b.targets.data(), seqs)) * seqs;
      const std::vector<double> parts = trainer.last_eval_per_replica();
      per_replica.resize(parts.size(), 0.0);
      for (size_t q = 0; q < parts.size(); ++q) per_replica[q] += parts[q] * seqs;
      weight += seqs;
    }
    p.val_loss = sum / weight;
    for (double& loss : per_replica) loss /= weight;
    p.val_loss_per_replica = std::move(per_replica);
  };

  auto flush = [&](bool last) {
    if (!writer) {  // another process replays and writes
      for (const auto& p : pending) main_totals.last_train_loss = p.record.loss, ++main_totals.steps_done;
      pending.clear();
      return;
    }
    if (!files_started) start_files();
    std::vector<const sim::StepGraph*> graphs;
    for (const auto& p : pending) graphs.push_back(&p.record.graph);
    for (auto& t : targets) {
      // A projected target takes its step times from estimate: nothing to replay.
      const std::vector<sim::ReplayResult> replays = t->projection ? std::vector<sim::ReplayResult>{}
                                                                   : t->replayer.replay(graphs);
      t->totals.replay_wall_seconds = t->replayer.wall_seconds;
      for (size_t i = 0; i < pending.size(); ++i)
        t->totals.add(pending[i],
                      t->projection ? t->projection->step(compressed(pending[i].record, traffic)) : replays[i],
                      t->files);
      t->files.write_summary(t->totals.summary_json());
    }
    pending.clear();
    last_flush = Clock::now();
    if (log && main_totals.steps_done > start_step) {
      const double elapsed = since(t_start);
      const int done_here = main_totals.steps_done - start_step;  // this process's steps
      const double left = elapsed / done_here * (steps - main_totals.steps_done);
      *log << "step " << main_totals.steps_done << "/" << steps << "  loss " << std::fixed
                   << std::setprecision(4) << main_totals.last_train_loss << std::setprecision(0) << "  "
                   << double(shape.batch_size) * double(shape.seq_len) * done_here / std::max(elapsed, 1e-9)
                   << " tok/s  sim " << hms(main_totals.sim_total_seconds) << "  left "
                   << (last ? hms(0) : hms(left)) << std::defaultfloat << std::setprecision(6) << "\n"
                   << std::flush;
    }
  };

  bool stopped = false;
  for (int k = start_step; k < steps; ++k) {
    const data::Batch batch = data::train_batch(split.train, shape, scenario.training.seed, uint64_t(k));
    PendingStep p;
    const auto t0 = Clock::now();
    p.record = trainer.train_step(k, batch.inputs.data(), batch.targets.data(), shape.batch_size);
    p.wall_seconds = since(t0);
    const bool finite = std::isfinite(p.record.loss);
    const bool eval_now = finite && ((scenario.training.eval_every > 0 && (k + 1) % scenario.training.eval_every == 0) ||
                                     k + 1 == steps);
    if (eval_now) evaluate(p);
    pending.push_back(std::move(p));
    if (!finite) {
      result.diverged = true;
      result.message = "training diverged: the loss is " + std::string(std::isnan(pending.back().record.loss) ? "NaN" : "infinite") +
                       " at step " + std::to_string(k + 1);
      for (auto& t : targets) {
        t->totals.diverged = true;
        t->totals.message = result.message;
      }
      flush(true);
      break;
    }
    const int every = scenario.training.checkpoint_every;
    const bool checkpoint_now = every > 0 && (k + 1) % every == 0 && k + 1 < steps;  // the last one follows the loop
    const bool stop_now = k + 1 == options.stop_after_steps;
    if (int(pending.size()) >= options.replay_every || since(last_flush) >= options.progress_interval_seconds ||
        k + 1 == steps || checkpoint_now || stop_now)
      flush(k + 1 == steps);
    if (checkpoint_now) take_checkpoint(false);
    if (stop_now) {  // as if killed here: the steps are written, no checkpoint follows
      stopped = true;
      result.message = "stopped after " + std::to_string(k + 1) + " steps (RunOptions::stop_after_steps)";
      break;
    }
  }
  if (!stopped) take_checkpoint(true);
  result.steps_done = main_totals.steps_done;
  result.final_train_loss = main_totals.last_train_loss;
  result.final_val_loss = main_totals.last_val_loss;
  result.sim_total_seconds = main_totals.sim_total_seconds;
  result.wall_seconds = since(t_start);
  result.summary = main_totals.summary_json();
  result.harness_overhead_fraction = result.summary.value("harness_overhead_fraction", 0.0);
  for (size_t i = 1; i < targets.size(); ++i)
    result.retimed.push_back({targets[i]->files.dir(), targets[i]->totals.sim_total_seconds,
                              targets[i]->totals.summary_json()});
  return result;
}

}  // namespace lowband::train
