#include "runtime/train/run.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <utility>

#include "common/error.h"
#include "runtime/data/batch.h"
#include "runtime/data/dataset.h"
#include "runtime/data/recall.h"
#include "runtime/scenario/load.h"
#include "runtime/sync/participation.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/memory_check.h"
#include "runtime/train/run_plan.h"
#include "runtime/train/run_targets.h"

namespace lowband::train {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

std::string hms(double seconds) {
  std::ostringstream out;
  if (!(seconds < 1e12)) {  // past what a scenario can make of a step (and NaN): no clock, a number
    out << std::scientific << std::setprecision(2) << seconds << " s";
    return out.str();
  }
  const long s = long(std::max(0.0, seconds) + 0.5);
  out << s / 3600 << ":" << std::setw(2) << std::setfill('0') << (s / 60) % 60 << ":" << std::setw(2)
      << std::setfill('0') << s % 60;
  return out.str();
}

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

// The corpus split into training and validation tokens, and the validation batches.
// Keyed recall generates every batch instead, when it is used (memory for one
// batch, whatever eval_batches is), and marks the validation answers.
struct RunCorpus {
  data::Dataset dataset;
  data::SplitTokens split;
  data::BatchShape shape;
  std::vector<data::Batch> validation;
  std::optional<RecallShape> recall;
  int recall_eval_batches = 0;

  data::Batch train_batch(uint64_t seed, int k) const {
    if (!recall) return data::train_batch(split.train, shape, seed, uint64_t(k));
    return data::recall_batch(*recall, seed, data::RecallStream::train, uint64_t(k) * uint64_t(shape.batch_size),
                              shape.batch_size).batch;
  }
  int validation_count() const { return recall ? recall_eval_batches : int(validation.size()); }
  // Validation batch i; with recall, which targets are answers (else empty).
  data::RecallBatch validation_batch(uint64_t seed, int i) const {
    if (!recall) return {validation[size_t(i)], {}};
    return data::recall_batch(*recall, seed, data::RecallStream::validation, uint64_t(i) * uint64_t(shape.batch_size),
                              shape.batch_size);
  }
};

RunCorpus recall_run_data(const Scenario& s, std::ostream* log) {
  RunCorpus d;
  d.shape = {s.model.seq_len, s.training.batch_size};
  d.recall = recall_shape(s);
  d.dataset.tokenizer = "byte";
  d.dataset.vocab_size = 256;
  d.dataset.generated = true;
  d.dataset.source = "generated:recall (" + std::to_string(d.recall->pairs) + " pairs, key " +
                     std::to_string(d.recall->key_tokens) + " / value " + std::to_string(d.recall->value_tokens) +
                     " tokens, seed " + std::to_string(s.training.seed) + ")";
  if (log) *log << d.dataset.describe() << "\n";
  d.recall_eval_batches = s.training.eval_batches;
  return d;
}

RunCorpus load_run_data(const Scenario& s, std::ostream* log) {
  if (s.training.data_source == "recall") return recall_run_data(s, log);
  RunCorpus d{data::load_training_dataset(s), {}, {s.model.seq_len, s.training.batch_size}, {}, {}, 0};
  if (d.dataset.vocab_size > s.model.vocab)
    throw InputError("model.vocab", "the " + d.dataset.tokenizer + " tokenizer needs vocab >= " +
                                        std::to_string(d.dataset.vocab_size));
  if (log) *log << d.dataset.describe() << "\n";
  d.split = data::split_tokens(d.dataset.tokens, s.training.validation_fraction);
  if (d.split.validation.size() > size_t(d.shape.seq_len) + 1)
    d.validation = data::validation_batches(d.split.validation, d.shape,
                                            int64_t(s.training.eval_batches) * d.shape.batch_size);
  return d;
}

// The steps from the plan's first to its last: train, evaluate, and every few
// steps replay what is pending on every target, write it, and checkpoint.
class RunLoop {
 public:
  RunLoop(const Scenario& s, const RunPlan& plan, parallel::Trainer& trainer, const RunCorpus& data,
          RunTargets& targets, std::ostream* log)
      : s_(s), plan_(plan), trainer_(trainer), data_(data), targets_(targets), log_(log),
        scenario_json_(to_json(s).dump()) {}

  // Fills the result's step counts, losses and stop reason.
  void run(RunResult& result);

 private:
  void evaluate(PendingStep& p);
  void evaluate_answers(PendingStep& p);
  void flush(bool last);
  // The open window's graph on its last pending step (Trainer::close_window):
  // what must be timed now cannot wait for the exchange's merge.
  void close_window();
  // Partial participation: step `step` (`p`, not yet pending) closes a round.
  // The round's steps are replayed as run, each replica is ready when its
  // nodes have finished them, sync::close_round says who made it, and the
  // trainer takes the outer step (the replicas that made it exchange among
  // themselves; the late ones fetch the result from one of them). The late
  // replicas' tasks leave the round's graphs, the fetch included: the round
  // does not wait for them. The exchange follows `p`'s graph, each rank where
  // its step ended.
  void close_round(int step, PendingStep& p);
  void checkpoint(bool complete);  // right after a flush: nothing pending
  void progress_line(bool last);

  const Scenario& s_;
  const RunPlan& plan_;
  parallel::Trainer& trainer_;
  const RunCorpus& data_;
  RunTargets& targets_;
  std::ostream* log_;
  const std::string scenario_json_;
  std::vector<PendingStep> pending_;
  // Whether rounds close with partial participation (the first after step H − 1).
  const bool partial_ = trainer_.closes_round(s_.parallel.data_sync.inner_steps - 1);
  Clock::time_point start_ = Clock::now(), last_flush_ = Clock::now();
};

void RunLoop::run(RunResult& result) {
  const int steps = plan_.steps;
  bool stopped = false;
  for (int k = plan_.start_step(); k < steps; ++k) {
    const data::Batch batch = data_.train_batch(s_.training.seed, k);
    PendingStep p;
    const auto t0 = Clock::now();
    p.record = trainer_.train_step(k, batch.inputs.data(), batch.targets.data(), data_.shape.batch_size);
    const bool finite = std::isfinite(p.record.loss);
    if (finite && trainer_.closes_round(k)) close_round(k, p);
    p.wall_seconds = since(t0);
    const int eval_every = s_.training.eval_every;
    if (finite && ((eval_every > 0 && (k + 1) % eval_every == 0) || k + 1 == steps)) evaluate(p);
    pending_.push_back(std::move(p));
    if (!finite) {
      result.diverged = true;
      result.message = "training diverged: the loss is " +
                       std::string(std::isnan(pending_.back().record.loss) ? "NaN" : "infinite") + " at step " +
                       std::to_string(k + 1);
      targets_.diverged(result.message);
      close_window();
      flush(true);
      break;
    }
    const int every = s_.training.checkpoint_every;
    const bool checkpoint_now = every > 0 && (k + 1) % every == 0 && k + 1 < steps;  // the last one follows the loop
    const bool stop_now = k + 1 == plan_.options.stop_after_steps;
    const bool must_flush = k + 1 == steps || checkpoint_now || stop_now;
    if (must_flush) close_window();
    // A window's steps are timed together, when it closes; a round's, when it
    // closes, for who made it.
    const bool round_open = partial_ && !trainer_.closes_round(k);
    if (must_flush || (!pending_.back().record.window_open && !round_open &&
                       (int(pending_.size()) >= plan_.options.replay_every ||
                        since(last_flush_) >= plan_.options.progress_interval_seconds)))
      flush(k + 1 == steps);
    if (checkpoint_now) checkpoint(false);
    if (stop_now) {  // as if killed here: the steps are written, no checkpoint follows
      stopped = true;
      result.message = "stopped after " + std::to_string(k + 1) + " steps (RunOptions::stop_after_steps)";
      break;
    }
  }
  if (!stopped) checkpoint(true);
  const RunTotals& main = targets_.main();
  result.steps_done = main.steps_done;
  result.final_train_loss = main.last_train_loss;
  result.final_val_loss = main.last_val_loss;
  result.sim_total_seconds = main.sim_total_seconds;
  result.wall_seconds = since(start_);
}

void RunLoop::evaluate(PendingStep& p) {
  if (data_.validation_count() == 0) return;
  double sum = 0, weight = 0;
  std::vector<double> per_replica;
  for (int i = 0; i < data_.validation_count(); ++i) {
    const data::Batch b = data_.validation_batch(s_.training.seed, i).batch;
    const int seqs = b.shape.batch_size;
    sum += double(trainer_.evaluate(b.inputs.data(), b.targets.data(), seqs)) * seqs;
    const std::vector<double> parts = trainer_.last_eval_per_replica();
    per_replica.resize(parts.size(), 0.0);
    for (size_t q = 0; q < parts.size(); ++q) per_replica[q] += parts[q] * seqs;
    weight += seqs;
  }
  p.val_loss = sum / weight;
  for (double& loss : per_replica) loss /= weight;
  p.val_loss_per_replica = std::move(per_replica);
  if (data_.recall) evaluate_answers(p);
}

// Loss and accuracy on the answer targets alone, remote and local apart: the
// same batches evaluated again with every other target ignored.
void RunLoop::evaluate_answers(PendingStep& p) {
  for (const auto& [kind, name] : {std::pair{data::AnswerKind::remote, "remote"}, {data::AnswerKind::local, "local"}}) {
    double loss_sum = 0, targets = 0, correct = 0;
    bool counted = true;
    for (int i = 0; i < data_.validation_count(); ++i) {
      const data::RecallBatch v = data_.validation_batch(s_.training.seed, i);
      const data::Batch& b = v.batch;
      std::vector<int32_t> masked = b.targets;
      int64_t n = 0;
      for (size_t t = 0; t < masked.size(); ++t)
        if (v.answer[t] == kind) ++n; else masked[t] = -1;
      if (n == 0) continue;
      loss_sum += double(trainer_.evaluate(b.inputs.data(), masked.data(), b.shape.batch_size)) * double(n);
      const int64_t right = trainer_.last_eval_correct();
      counted = counted && right >= 0;
      correct += double(right);
      targets += double(n);
    }
    const std::string key = std::string("val_answer_") + name;
    p.val_answers[key + "_targets"] = targets;
    if (targets == 0) continue;
    p.val_answers[key + "_loss"] = loss_sum / targets;
    if (counted) p.val_answers[key + "_accuracy"] = correct / targets;
  }
}

void RunLoop::close_window() {
  if (pending_.empty() || !pending_.back().record.window_open) return;
  parallel::StepRecord& last = pending_.back().record;
  last.graph = trainer_.close_window();
  last.window_open = false;
}

void RunLoop::close_round(int step, PendingStep& p) {
  const int H = s_.parallel.data_sync.inner_steps;
  if (pending_.size() < size_t(H - 1))
    throw std::logic_error("RunLoop::close_round: " + std::to_string(pending_.size()) + " steps of the round pending");
  std::vector<PendingStep*> round;
  for (size_t i = pending_.size() + 1 - size_t(H); i < pending_.size(); ++i) round.push_back(&pending_[i]);
  round.push_back(&p);
  const std::vector<int> replica_of = trainer_.node_replicas();
  const int R = *std::max_element(replica_of.begin(), replica_of.end()) + 1;
  sync::RoundClose close;
  if (plan_.writer) {  // the process that holds the graphs and replays them
    std::vector<const sim::StepGraph*> graphs;
    for (const PendingStep* q : round) graphs.push_back(&q->record.graph);
    // Each replica ready when the last of its nodes has finished each step.
    std::vector<double> ready(size_t(R), 0.0);
    for (const sim::ReplayResult& r : targets_.replay_round(graphs)) {
      std::vector<double> replica_step(size_t(R), 0.0);
      for (size_t n = 0; n < r.rank_finish_seconds.size() && n < replica_of.size(); ++n)
        if (replica_of[n] >= 0)
          replica_step[size_t(replica_of[n])] = std::max(replica_step[size_t(replica_of[n])], r.rank_finish_seconds[n]);
      for (int q = 0; q < R; ++q) ready[size_t(q)] += replica_step[size_t(q)];
    }
    close = sync::close_round(s_.parallel.data_sync, ready);
  }
  if (comm::Communicator* comm = plan_.options.comm) {  // MPI: every process trains what rank 0 decided
    std::vector<uint8_t> made(size_t(R), 0);
    for (int q = 0; q < R && plan_.writer; ++q) made[size_t(q)] = close.made_it[size_t(q)];
    comm->broadcast(made.data(), R, comm::DType::u8, 0, comm::Wire("round_close", -1));
    close.made_it.assign(made.begin(), made.end());
  }
  const parallel::Trainer::ClosedRound exchange = trainer_.close_round(step, close.made_it);
  if (!plan_.writer) return;  // rank 0 holds the graphs and writes the steps
  std::vector<bool> late_node(replica_of.size(), false);
  for (size_t n = 0; n < replica_of.size(); ++n)
    late_node[n] = replica_of[n] >= 0 && !close.made_it[size_t(replica_of[n])];
  if (close.participants() < R) {
    for (PendingStep* q : round) q->record.graph = q->record.graph.without_ranks(late_node);
    // Nor for their fetch of the result, which overlaps the next round's start.
    p.record.graph.append_per_rank(exchange.graph.without_ranks(late_node));
  } else {
    p.record.graph.append_per_rank(exchange.graph);
  }
  p.record.kernel_wall_seconds += exchange.kernel_wall_seconds;
  p.record.record_wall_seconds += exchange.record_wall_seconds;
  p.round_made_it = close.made_it;
  p.round_wait_seconds = close.wait_seconds;
}

void RunLoop::flush(bool last) {
  RunTotals& main = targets_.main();
  if (!plan_.writer) {  // another process replays and writes
    for (const auto& p : pending_) main.last_train_loss = p.record.loss, ++main.steps_done;
    pending_.clear();
    return;
  }
  if (!targets_.files_started()) targets_.start_files(false);
  targets_.add(pending_);
  pending_.clear();
  last_flush_ = Clock::now();
  if (log_ && main.steps_done > plan_.start_step()) progress_line(last);
}

void RunLoop::progress_line(bool last) {
  const RunTotals& main = targets_.main();
  const double elapsed = since(start_);
  const int done_here = main.steps_done - plan_.start_step();  // this process's steps
  const double left = elapsed / done_here * (plan_.steps - main.steps_done);
  const double tokens_per_step = double(data_.shape.batch_size) * double(data_.shape.seq_len);
  *log_ << "step " << main.steps_done << "/" << plan_.steps << "  loss " << std::fixed << std::setprecision(4)
        << main.last_train_loss << std::setprecision(0) << "  "
        << tokens_per_step * done_here / std::max(elapsed, 1e-9) << " tok/s  sim " << hms(main.sim_total_seconds)
        << "  left " << (last ? hms(0) : hms(left)) << std::defaultfloat << std::setprecision(6) << "\n"
        << std::flush;
}

void RunLoop::checkpoint(bool complete) {
  if (s_.training.checkpoint_every <= 0) return;
  Checkpoint c;
  c.scenario_json = scenario_json_;
  c.steps_done = targets_.main().steps_done;
  c.complete = complete;
  c.omp_threads = plan_.threads;
  if (!complete) {
    std::ostringstream state;
    trainer_.save_state(state);
    c.trainer_state = state.str();
  }
  c.targets = targets_.checkpoints();
  if (plan_.writer) write_checkpoint(targets_.main_dir(), c);
}

}  // namespace

RunResult run_training(const Scenario& scenario, const RunOptions& options) {
  check_training_fits(scenario);  // before anything is allocated or written
  const RunPlan plan = plan_run(scenario, options);  // holds the directories' locks to the end
  if (plan.already_complete()) return completed_run_result(*plan.resumed, plan.options.out_dir);
  const ThreadCount thread_count(plan.threads);
  const parallel::ComputeTiming timing = compute_timing(scenario);
  const std::unique_ptr<parallel::Trainer> trainer = parallel::make_trainer(scenario, timing, plan.options.comm);
  std::ostream* const log = plan.writer ? plan.options.log : nullptr;
  if (plan.resumed) restore_trainer(*trainer, *plan.resumed, plan.options.out_dir);
  const RunCorpus data = load_run_data(scenario, log);

  // The trained run first, then the retime targets; with profile timing the
  // graphs repeat, so each target replays every distinct graph once.
  RunTargets targets(scenario, plan.options.out_dir, plan.retimes, timing == parallel::ComputeTiming::profile,
                     plan.writer);
  if (plan.resumed && plan.writer) truncate_steps_files(targets.dirs(), *plan.resumed);  // trained again
  const RunFacts facts{plan.steps, double(data.shape.batch_size) * double(data.shape.seq_len),
                       trainer->compressed_traffic(), data.dataset.describe(), trainer->ranks(), timing};
  targets.start_totals(facts, plan.resumed ? &*plan.resumed : nullptr);
  // The run's files, valid from then on even if a step throws. A fresh run writes
  // them with its first steps: one that cannot start leaves nothing behind.
  if (plan.resumed) targets.start_files(true);

  RunResult result;
  result.run_dir = targets.main_dir();
  result.resumed_at_step = plan.start_step();
  result.threads = plan.threads;
  if (log && plan.resumed)
    *log << "resuming " << result.run_dir << " at step " << plan.start_step() << "/" << plan.steps << " ("
         << kCheckpointFile << ") with " << plan.threads << " OpenMP thread" << (plan.threads == 1 ? "" : "s") << "\n";
  if (!plan.threads_message.empty()) {
    std::ostream* out = !plan.writer                                        ? nullptr
                        : plan.threads_warning && plan.options.warnings ? plan.options.warnings
                                                                            : log;
    if (out) *out << (plan.threads_warning ? "warning: " : "") << plan.threads_message << "\n" << std::flush;
  }
  try {
    RunLoop(scenario, plan, *trainer, data, targets, log).run(result);
  } catch (const std::exception& e) {
    if (plan.options.on_step_error) plan.options.on_step_error(e);
    throw;
  }
  result.summary = targets.main().summary_json();
  result.harness_overhead_fraction = result.summary.value("harness_overhead_fraction", 0.0);
  result.retimed = targets.retimed();
  return result;
}

}  // namespace lowband::train
