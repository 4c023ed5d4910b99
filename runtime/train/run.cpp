#include "runtime/train/run.h"

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
#include "runtime/data/dataset.h"
#include "runtime/scenario/equal.h"
#include "runtime/scenario/load.h"
#include "runtime/train/run_files.h"
#include "sim/replay.h"

namespace lowband::train {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

parallel::ComputeTiming compute_timing(const Scenario& s) {
  if (s.devices.timing == DeviceTiming::measured) return parallel::ComputeTiming::measured;
  if (s.devices.timing == DeviceTiming::profile) return parallel::ComputeTiming::profile;
  bool all_cpu = s.devices.default_profile.name == "cpu";
  for (const auto& [node, profile] : s.devices.node_profiles)
    if (node < s.parallel.context && profile.name != "cpu") all_cpu = false;
  return all_cpu ? parallel::ComputeTiming::measured : parallel::ComputeTiming::profile;
}

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
      const std::vector<sim::ReplayResult> fresh = sim::replay_batch(network_, todo);
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

// One network the training is timed on: its run directory, running totals and replays.
struct Target {
  Target(const Scenario& s, const std::string& out_dir, bool cache_replays)
      : scenario(s), files(out_dir.empty() ? default_run_dir(s.name) : out_dir), replayer(scenario.network, cache_replays) {}
  Scenario scenario;
  RunFiles files;
  RunTotals totals;
  Replayer replayer;
};

// A retime target must train exactly like the trained scenario.
void check_retime_target(const Scenario& trained, const Scenario& target, size_t index) {
  Scenario same = target;
  same.name = trained.name;
  same.description = trained.description;
  same.network = trained.network;
  const std::string diff = scenario_difference(trained, same);
  if (!diff.empty())
    throw InputError("retime target " + std::to_string(index) + " (" + target.name + ")",
                     "differs from the trained scenario in more than its network: " + diff);
}

}  // namespace

RunResult run_training(const Scenario& scenario, const RunOptions& options) {
  const int steps = options.steps >= 0 ? options.steps : scenario.training.steps;
  if (steps < 1) throw InputError(options.steps >= 0 ? "--steps" : "training.steps", "must be at least 1");
  for (size_t i = 0; i < options.also_timed_on.size(); ++i)
    check_retime_target(scenario, options.also_timed_on[i].scenario, i);
  const parallel::ComputeTiming timing = compute_timing(scenario);
  auto codec = compress::make_kv_codec(scenario);
  const std::string codec_name = codec->describe();
  parallel::ContextTrainer trainer(scenario, std::move(codec), timing);

  const data::Dataset dataset = data::load_training_dataset(scenario);
  if (dataset.vocab_size > scenario.model.vocab)
    throw InputError("model.vocab", "the " + dataset.tokenizer + " tokenizer needs vocab >= " +
                                        std::to_string(dataset.vocab_size));
  if (options.log) *options.log << dataset.describe() << "\n";
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
  targets.push_back(std::make_unique<Target>(scenario, options.out_dir, cache_replays));
  for (const RetimeTarget& t : options.also_timed_on)
    targets.push_back(std::make_unique<Target>(t.scenario, t.out_dir, cache_replays));
  const double uncompressed_kv_bytes = parallel::build_context_parallel(scenario).uncompressed_kv_bytes;
  for (auto& t : targets) {
    t->files.write_scenario(to_json(t->scenario).dump(2) + "\n");
    RunTotals& totals = t->totals;
    totals.steps_planned = steps;
    totals.tokens_per_step = double(shape.batch_size) * double(shape.seq_len);
    totals.uncompressed_kv_bytes_per_step = uncompressed_kv_bytes;
    totals.header = {{"scenario", t->scenario.name},
                     {"scenario_source", t->scenario.source},
                     {"run_dir", t->files.dir()},
                     {"network", sim::describe(t->scenario.network)},
                     {"network_model", sim::to_string(t->scenario.network.model)},
                     {"codec", codec_name},
                     {"data", dataset.describe()},
                     {"ranks", trainer.ranks()},
                     {"compute_timing", timing == parallel::ComputeTiming::measured ? "measured" : "profile"}};
    if (t.get() != targets.front().get()) totals.header["trained_in"] = targets.front()->files.dir();
    t->files.write_curve(totals.curve_csv);  // valid from the start, even if a step throws
    t->files.write_summary(totals.summary_json());
  }
  RunTotals& main_totals = targets.front()->totals;

  std::vector<PendingStep> pending;
  const auto t_start = Clock::now();
  auto last_flush = Clock::now();
  RunResult result;
  result.run_dir = targets.front()->files.dir();

  auto evaluate = [&]() -> std::optional<double> {
    if (val_batches.empty()) return std::nullopt;
    double sum = 0, weight = 0;
    for (const auto& b : val_batches) {
      const int seqs = b.shape.batch_size;
      sum += double(trainer.evaluate(b.inputs.data(), b.targets.data(), seqs)) * seqs;
      weight += seqs;
    }
    return sum / weight;
  };

  auto flush = [&](bool last) {
    std::vector<const sim::StepGraph*> graphs;
    for (const auto& p : pending) graphs.push_back(&p.record.graph);
    for (auto& t : targets) {
      const std::vector<sim::ReplayResult> replays = t->replayer.replay(graphs);
      t->totals.replay_wall_seconds = t->replayer.wall_seconds;
      for (size_t i = 0; i < pending.size(); ++i) t->totals.add(pending[i], replays[i], t->files);
      t->files.write_curve(t->totals.curve_csv);
      t->files.write_summary(t->totals.summary_json());
    }
    pending.clear();
    last_flush = Clock::now();
    if (options.log && main_totals.steps_done > 0) {
      const double elapsed = since(t_start);
      const double left = elapsed / main_totals.steps_done * (steps - main_totals.steps_done);
      *options.log << "step " << main_totals.steps_done << "/" << steps << "  loss " << std::fixed
                   << std::setprecision(4) << main_totals.last_train_loss << std::setprecision(0) << "  "
                   << main_totals.tokens_per_step * main_totals.steps_done / std::max(elapsed, 1e-9)
                   << " tok/s  sim " << hms(main_totals.sim_total_seconds) << "  left "
                   << (last ? hms(0) : hms(left)) << std::defaultfloat << std::setprecision(6) << "\n"
                   << std::flush;
    }
  };

  for (int k = 0; k < steps; ++k) {
    const data::Batch batch = data::train_batch(split.train, shape, scenario.training.seed, uint64_t(k));
    PendingStep p;
    const auto t0 = Clock::now();
    p.record = trainer.train_step(k, batch.inputs.data(), batch.targets.data(), shape.batch_size);
    p.wall_seconds = since(t0);
    const bool finite = std::isfinite(p.record.loss);
    const bool eval_now = finite && ((scenario.training.eval_every > 0 && (k + 1) % scenario.training.eval_every == 0) ||
                                     k + 1 == steps);
    if (eval_now) p.val_loss = evaluate();
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
    if (int(pending.size()) >= options.replay_every || since(last_flush) >= options.progress_interval_seconds ||
        k + 1 == steps)
      flush(k + 1 == steps);
  }
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
