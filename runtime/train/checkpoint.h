#pragma once
// RUN_DIR/checkpoint.bin: what `lowband run --resume RUN_DIR` needs to continue a
// run exactly where the checkpoint was taken (runtime/train/run.h takes one every
// training.checkpoint_every steps, right after a replay batch is written, and a last
// one, marked complete, when the run ends).
//
// File layout (native byte order, common/binary_io.h):
//   8 bytes  magic "LBCKPT\r\n"
//   u64      format version (kCheckpointVersion)
//   u64      payload bytes
//   u64      checksum of the payload (binary::checksum64)
//   payload: the resolved scenario JSON, steps done, complete flag, the trainer's
//            state (parallel::Trainer::save_state) and, per output target, its
//            RunTotals and the byte length of its steps.jsonl at the checkpoint
//            (lines after it were written by a process that died before the next
//            checkpoint: the resumed run drops them and computes them again);
//            since version 2, last, the OpenMP thread count the training ran with.
// It is written atomically (temporary file, then rename), so a kill at any moment
// leaves the previous checkpoint or the new one, never half of one. The last one,
// marked complete, keeps the totals but no trainer state (nothing is left to train).
//
// Why the thread count: oneDNN's sgemm (its AVX2 kernels at least) and the CPU
// kernels' OpenMP sums split their work by thread, so the rounding, and from the
// first step on the gradient norms, depend on it. A resumed run continues with the
// recorded count (resume_threads) to equal the uninterrupted run bit for bit.
// Version 1 files (no count) still resume: the count is then unknown (0).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/scenario/scenario.h"
#include "runtime/train/run.h"
#include "runtime/train/run_files.h"

namespace lowband::train {

constexpr const char* kCheckpointFile = "checkpoint.bin";
constexpr uint64_t kCheckpointVersion = 2;  // written; version 1 (no thread count) is read too

// One output target's files at the checkpoint.
struct TargetCheckpoint {
  std::string run_dir;        // absolute
  std::string scenario_json;  // to_json(its scenario).dump()
  RunTotals totals;
  uint64_t steps_jsonl_bytes = 0;
};

struct Checkpoint {
  std::string scenario_json;  // to_json(scenario).dump(): what the run was started with
  int steps_done = 0;         // the next step to train is this index (from 0)
  bool complete = false;      // the run ended (all steps, or diverged): nothing to resume
  std::string trainer_state;  // Trainer::save_state; empty when complete
  std::vector<TargetCheckpoint> targets;  // the trained run first, then RunOptions::also_timed_on
  int omp_threads = 0;  // OpenMP threads the training ran with (omp_get_max_threads); 0: unknown (version 1)
};

std::string checkpoint_path(const std::string& run_dir);

// Writes checkpoint_path(run_dir) atomically.
void write_checkpoint(const std::string& run_dir, const Checkpoint& checkpoint);

// Reads and verifies a checkpoint. InputError naming the file when it is missing,
// not a checkpoint, of another format version, truncated or damaged.
Checkpoint read_checkpoint(const std::string& path);

// The byte length of RUN_DIR/steps.jsonl now (0 when there is none).
uint64_t steps_file_bytes(const std::string& run_dir);

// For a resumed run: the checkpoint in run_dir, checked against the scenario to
// train. nullopt when run_dir holds no checkpoint (the run stopped before its first
// one, or checkpoint_every is 0): it starts again from step 0, unless its summary.json
// says it ended (InputError, check_restartable in run_dir.h). InputError("--resume")
// when run_dir is no directory; InputError naming checkpoint.bin when it is not a
// file, unreadable, or written for another scenario (naming the first key that differs).
std::optional<Checkpoint> checkpoint_to_resume(const std::string& run_dir, const Scenario& scenario);

// The retime targets of a resumed run: those the checkpoint records when `given` is
// empty, else `given`, which must match them (count, scenarios; InputError otherwise).
std::vector<RetimeTarget> retime_targets_to_resume(const Checkpoint& checkpoint, const std::vector<RetimeTarget>& given,
                                                   const std::string& run_dir);

// How many OpenMP threads a resumed run trains with, and what to say about it.
// recorded: Checkpoint::omp_threads (0: unknown); wanted: the count this process
// would use otherwise (>= 1); forced: wanted was asked for explicitly (--threads).
// The recorded count, unless forced to another or unknown: then wanted, with a
// warning that the continuation may not be bit-identical to the uninterrupted run.
struct ResumeThreads {
  int threads = 1;
  std::string message;   // "" or one line (no newline) for the log
  bool warning = false;  // message warns that the numbers may differ from the uninterrupted run's
};
ResumeThreads resume_threads(int recorded, int wanted, bool forced);

// Loads the checkpoint's trainer state; InputError naming the checkpoint when it does
// not fit the trainer (another build or shape).
void restore_trainer(parallel::Trainer& trainer, const Checkpoint& checkpoint, const std::string& run_dir);

// What run_training returns for a run whose checkpoint says it ended.
RunResult completed_run_result(const Checkpoint& checkpoint, const std::string& run_dir);

// Cuts each target's steps.jsonl back to its length at the checkpoint, dropping the
// lines a killed process appended after it. Checks every file before cutting any:
// InputError naming a file shorter than recorded or not ending a line there.
void truncate_steps_files(const std::vector<std::string>& run_dirs, const Checkpoint& checkpoint);

// RunTotals to and from bytes, bit-exact (doubles as their bits); exposed for tests.
std::string encode_totals(const RunTotals& totals);
RunTotals decode_totals(const std::string& bytes);  // throws binary::BinaryFormatError

}  // namespace lowband::train
