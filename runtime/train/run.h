#pragma once
// `lowband run`: train a scenario's model over its layout's ranks (context
// ranks, pipeline stages, data-parallel replicas; parallel::make_trainer, in-process
// or one rank per MPI process), replay every step's recorded graph on the
// scenario's network (sim/replay.h), and write a run directory:
//   scenario.json  the resolved scenario (to_json), written once
//   steps.jsonl    one JSON object per step, appended a whole line at a time
//                  each time a batch of steps has been replayed
//   curve.csv      step, simulated hours, losses (units in the column names)
//   summary.json   final losses, perplexity, throughput, bytes, compression
//                  ratio, network model, harness overhead, diverged or not; K/V
//                  reconstruction error per layer (last step, mean of the last
//                  10 % of steps) when the codec reports one
// On a changing network (network.dynamics) the steps replay back to back from the
// run's clock, and steps.jsonl and summary.json also give the time lost against
// the nominal network (runtime/train/replayer.h).
// curve.csv and summary.json are rewritten atomically after every replayed batch,
// so the directory is valid (and readable) at any time, also after a divergence.
//
// One training can be timed on several networks at once (RunOptions::also_timed_on):
// a synchronous run's losses do not depend on the network, so each extra target
// gets its own run directory with the same losses and its own replays. `lowband
// sweep` trains once per distinct numerics this way.
//
// Checkpoints (runtime/train/checkpoint.h): every training.checkpoint_every steps,
// right after that step's replay batch is written, RUN_DIR/checkpoint.bin holds the
// trainer's whole state and every target's totals; RunOptions::resume continues
// from it bit for bit (the same steps.jsonl, curve.csv and summary.json as a run
// never stopped, but for wall-clock figures), dropping steps.jsonl lines written
// after it. The checkpoint records the OpenMP thread count the training ran with,
// and a resumed run continues with that count (RunOptions::threads), because on
// some CPUs the numbers depend on it.
#include <cstdint>
#include <exception>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "comm/communicator.h"
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/parallel/trainer.h"
#include "runtime/scenario/scenario.h"

namespace lowband::train {

// Another network to time the same training on, with its own run directory.
struct RetimeTarget {
  Scenario scenario;    // equal to the trained scenario except name, description, network, projection
  std::string out_dir;  // "": runs/<scenario name>-<UTC timestamp>
};

struct RunOptions {
  std::string out_dir;          // "": runs/<scenario name>-<UTC timestamp>
  int steps = -1;               // < 0: training.steps
  // Compute seconds, validation split and evaluation size come from the
  // scenario: devices.timing, training.validation_fraction, training.eval_batches.
  int replay_every = 20;             // steps per batched SimGrid replay (one child process)
  double progress_interval_seconds = 5;  // at most one progress line per interval (and the last step)
  std::ostream* log = nullptr;       // progress lines and the dataset line; null: silent
  std::vector<RetimeTarget> also_timed_on;  // more networks for the same training
  // Continue the run in out_dir from its checkpoint (checkpoint_to_resume): steps
  // defaults to the recorded run's; also_timed_on to the recorded targets (or
  // must match them). Nothing is written when the checkpoint says the run ended.
  bool resume = false;
  // OpenMP threads to train with (omp_set_num_threads, restored on return); 0: the
  // process's count (omp_get_max_threads()). A resumed run continues instead with
  // the count its checkpoint records (resume_threads in checkpoint.h), saying so in
  // the log when that differs, unless threads_forced: then with `threads`, warning
  // that the numbers may not be bit-identical to the uninterrupted run's.
  int threads = 0;
  bool threads_forced = false;
  std::ostream* warnings = nullptr;  // where such warnings go; null: log
  // For tests: stop once this many steps are done, after writing them but without
  // a checkpoint, as a kill would (lines past the last checkpoint stay). < 0: off.
  int stop_after_steps = -1;
  // One rank per process (MPI: `mpirun -np P lowband run`): every process calls
  // run_training with its rank's communicator, the same scenario and options;
  // rank 0 alone writes the run directory and the log. null: all ranks in-process.
  comm::Communicator* comm = nullptr;
  // Called with the exception a training step throws while the trainer, and the
  // buffers its deferred collectives still read and write, exist; the exception
  // goes on if it returns. An MPI rank ends the job here (cli/cmd_run.cpp): a peer
  // may never join those collectives, and unwinding would free their buffers.
  std::function<void(const std::exception&)> on_step_error;
};

struct RunResult {
  std::string run_dir;
  int steps_done = 0;
  bool diverged = false;
  std::string message;           // why it stopped early ("" when it did not)
  double final_train_loss = 0;
  std::optional<double> final_val_loss;
  double sim_total_seconds = 0;
  double wall_seconds = 0;
  double harness_overhead_fraction = 0;  // (recording + replay) wall / step wall
  nlohmann::json summary;        // what summary.json holds
  int resumed_at_step = 0;       // steps restored from a checkpoint (0: trained from the start)
  bool already_complete = false; // resume of a run that had ended: nothing trained
  int threads = 0;               // OpenMP threads this process trained with (0: nothing trained)
  // One per RunOptions::also_timed_on target, in order: its run directory, its
  // simulated seconds and its summary (losses equal the trained run's).
  struct Retimed {
    std::string run_dir;
    double sim_total_seconds = 0;
    nlohmann::json summary;
  };
  std::vector<Retimed> retimed;
};

// Throws InputError for a scenario it cannot train (see parallel::make_trainer), an
// unusable output directory ("--out"), a retime target that differs from the
// trained scenario in more than its name, description and network, or (resume) a
// checkpoint that is missing, damaged or for another scenario, or --steps other
// than the recorded run's.
RunResult run_training(const Scenario& scenario, const RunOptions& options);

// Where the run's compute seconds come from (devices.timing): measured on this
// CPU when every rank's profile is "cpu" and training.backend is "cpu"
// (automatic), else the device profile.
parallel::ComputeTiming compute_timing(const Scenario& scenario);

// The default run directory: runs/<name>-<YYYYmmdd-HHMMSS> (UTC), with -2, -3...
// appended when it exists.
// The progress line's clock: "12:03:09" (hours unbounded), or "7.00e+305 s" past
// 1e12 s (a long's seconds, and any real run), so no step time overflows it.
std::string hms(double seconds);

std::string default_run_dir(const std::string& scenario_name);

}  // namespace lowband::train
