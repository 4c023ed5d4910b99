#include "runtime/train/run_plan.h"

#include <omp.h>

#include <ostream>

#include "common/error.h"
#include "runtime/scenario/equal.h"

namespace lowband::train {
namespace {

// A retime target must train exactly like the trained scenario: only what times
// it (network, projection) and its name may differ.
void check_retime_target(const Scenario& trained, const Scenario& target, size_t index) {
  const std::string diff = training_difference(trained, target);
  if (!diff.empty())
    throw InputError("retime target " + std::to_string(index) + " (" + target.name + ")",
                     "differs from the trained scenario in more than its network and projection: " + diff);
}

// One writer per directory (run_dir.h), from before its checkpoint is read.
void lock(RunPlan& plan, const std::string& dir, const std::string& place, bool create) {
  if (!plan.writer) return;
  plan.locks.emplace_back(dir, place, create);
  remove_stale_temp_files(dir);
}

// Before any kernel runs: a resumed run takes the count its checkpoint records.
void plan_threads(RunPlan& plan) {
  if (plan.options.threads < 0) throw InputError("--threads", "must be at least 1");
  plan.threads = plan.options.threads > 0 ? plan.options.threads : omp_get_max_threads();
  if (!plan.resumed) return;
  const ResumeThreads r = resume_threads(plan.resumed->omp_threads, plan.threads, plan.options.threads_forced);
  plan.threads = r.threads;
  plan.threads_message = r.message;
  plan.threads_warning = r.warning;
}

}  // namespace

RunPlan plan_run(const Scenario& scenario, const RunOptions& options) {
  RunPlan plan;
  plan.options = options;
  RunOptions& o = plan.options;
  if (o.out_dir.empty() && !o.resume) o.out_dir = default_run_dir(scenario.name);
  plan.writer = !o.comm || o.comm->rank() == 0;
  // A new run's retime targets are checked before any directory is made.
  if (!o.resume)
    for (size_t i = 0; i < o.also_timed_on.size(); ++i) check_retime_target(scenario, o.also_timed_on[i].scenario, i);
  lock(plan, o.out_dir, o.resume ? "--resume" : "--out", !o.resume);
  // A resumed run's checkpoint is read and checked before anything is built or written.
  if (o.resume) plan.resumed = checkpoint_to_resume(o.out_dir, scenario);
  if (o.resume && !plan.resumed && o.log)
    *o.log << o.out_dir << " has no checkpoint yet: training it from step 0\n";
  const int recorded_steps = plan.resumed ? plan.resumed->targets.front().totals.steps_planned : -1;
  if (plan.resumed && o.steps >= 0 && o.steps != recorded_steps)
    throw InputError("--steps", "the run being resumed has " + std::to_string(recorded_steps) + " steps, got " +
                                    std::to_string(o.steps));
  plan.steps = o.steps >= 0 ? o.steps : plan.resumed ? recorded_steps : scenario.training.steps;
  if (plan.steps < 1) throw InputError(o.steps >= 0 ? "--steps" : "training.steps", "must be at least 1");
  plan.retimes = plan.resumed ? retime_targets_to_resume(*plan.resumed, o.also_timed_on, o.out_dir) : o.also_timed_on;
  for (size_t i = 0; i < plan.retimes.size(); ++i) check_retime_target(scenario, plan.retimes[i].scenario, i);
  for (RetimeTarget& t : plan.retimes) {
    if (t.out_dir.empty()) t.out_dir = default_run_dir(t.scenario.name);
    lock(plan, t.out_dir, "--also-time-on", true);
  }
  if (!plan.resumed)
    for (const DirLock& held : plan.locks) check_restartable(held.dir(), held.dir() == o.out_dir ? "--out" : "--also-time-on");
  if (!plan.already_complete()) plan_threads(plan);
  return plan;
}

}  // namespace lowband::train
