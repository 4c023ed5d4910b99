#pragma once
// A sweep on a Slurm cluster: one job array whose task N runs
// `lowband sweep --resume DIR --training N` — one training and every network it
// is timed on — in the sweep directory, the only state the tasks share (it must
// be on the cluster's shared file system). `lowband sweep --launcher slurm`
// writes the directory and its plan (runner.h: prepare_only), this script into
// DIR/slurm/array.sbatch, and submits it with sbatch; a second submission (with
// --resume DIR) asks only for the trainings still to run. Tasks that meet
// (a training submitted twice) train it once (SweepOptions::only_training).
#include <string>
#include <utility>
#include <vector>

namespace lowband::sweep {

struct SlurmOptions {
  int at_once = 0;            // array tasks running at once (--array=...%K); 0: as the scheduler allows
  int cpus_per_task = 1;      // OpenMP threads of each training
  std::string time, mem, partition, account;  // sbatch's --time, --mem, --partition, --account ("" none)
  std::vector<std::string> extra;             // more sbatch options, each one "--name=value" as sbatch reads it
  bool gpu = false;           // a scenario on the GPU backend: --gres=gpu:1
};

// "1-3,5,7-8": Slurm's --array list of the (sorted) task ids.
std::string array_list(const std::vector<int>& ids);

// The batch script. `lowband` and `sweep_dir` absolute; `workdir`: where the
// trainings run (their relative data paths), the submitter's directory.
std::string slurm_script(const std::string& lowband, const std::string& sweep_dir, const std::string& workdir,
                         const std::string& name, const std::vector<int>& trainings, const SlurmOptions& options);

// Runs `sbatch --parsable SCRIPT` (LOWBAND_SBATCH names another program) and
// returns the job id it prints. InputError("--launcher") when sbatch cannot be
// started or refuses the job, with its message.
std::string submit_to_slurm(const std::string& script_path);

// Checked before anything is written: sbatch can be run (`sbatch --version`).
void require_sbatch();

// The array tasks of these jobs still queued or running, as squeue lists them
// (`squeue --array --noheader --format=%i %T`: "4242_3", "RUNNING"; LOWBAND_SQUEUE
// names another program); empty where squeue cannot be run.
std::vector<std::pair<std::string, std::string>> slurm_queue(const std::vector<std::string>& job_ids);

}  // namespace lowband::sweep
