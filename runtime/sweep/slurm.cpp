#include "runtime/sweep/slurm.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "common/error.h"

extern char** environ;

namespace lowband::sweep {
namespace {

struct Ran {
  int status = -1;  // the exit status; -1 when it could not start or was killed
  std::string output;  // stdout and stderr
};

// Runs argv[0] (found on PATH) and collects what it prints.
Ran run_program(const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  Ran ran;
  if (rc != 0) {
    ::close(fds[0]);
    ran.output = std::strerror(rc);
    return ran;
  }
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    ran.output.append(buf, size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) ran.status = WEXITSTATUS(status);
  return ran;
}

std::string sbatch_program() {
  const char* given = std::getenv("LOWBAND_SBATCH");
  return given && *given ? given : "sbatch";
}

std::string first_line(const std::string& text) {
  const size_t end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

// A path or word for the script's shell, quoted.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string array_list(const std::vector<int>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(ids[i]) + (j > i ? "-" + std::to_string(ids[j]) : "");
    i = j + 1;
  }
  return out;
}

std::string slurm_script(const std::string& lowband, const std::string& sweep_dir, const std::string& workdir,
                         const std::string& name, const std::vector<int>& trainings, const SlurmOptions& o) {
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# lowband sweep " << sweep_dir << ": one array task per training (written by lowband sweep --launcher slurm).\n"
    << "# Where it stands: lowband sweep --status " << sweep_dir << "\n"
    << "#SBATCH --job-name=lowband-" << name << "\n"
    << "#SBATCH --array=" << array_list(trainings) << (o.at_once > 0 ? "%" + std::to_string(o.at_once) : "") << "\n"
    << "#SBATCH --ntasks=1\n"
    << "#SBATCH --cpus-per-task=" << o.cpus_per_task << "\n"
    << "#SBATCH --chdir=" << workdir << "\n"
    << "#SBATCH --output=" << sweep_dir << "/slurm/training-%a.out\n";
  if (!o.time.empty()) s << "#SBATCH --time=" << o.time << "\n";
  if (!o.mem.empty()) s << "#SBATCH --mem=" << o.mem << "\n";
  if (!o.partition.empty()) s << "#SBATCH --partition=" << o.partition << "\n";
  if (!o.account.empty()) s << "#SBATCH --account=" << o.account << "\n";
  if (o.gpu) s << "#SBATCH --gres=gpu:1\n";
  for (const std::string& e : o.extra) s << "#SBATCH " << e << "\n";
  s << "set -eu\n"
    << "export OMP_NUM_THREADS=" << o.cpus_per_task << "\n"
    << "exec " << quoted(lowband) << " sweep --resume " << quoted(sweep_dir)
    << " --training \"$SLURM_ARRAY_TASK_ID\" --threads " << o.cpus_per_task << "\n";
  return s.str();
}

void require_sbatch() {
  const Ran ran = run_program({sbatch_program(), "--version"});
  if (ran.status != 0)
    throw InputError("--launcher", sbatch_program() + " cannot be run (" + first_line(ran.output) +
                                       "): submit from a machine with Slurm's client (Debian: slurm-client), or set "
                                       "LOWBAND_SBATCH");
}

std::vector<std::pair<std::string, std::string>> slurm_queue(const std::vector<std::string>& job_ids) {
  std::string ids;
  for (const std::string& id : job_ids) ids += (ids.empty() ? "" : ",") + id;
  const char* given = std::getenv("LOWBAND_SQUEUE");
  const Ran ran = run_program({given && *given ? given : "squeue", "--array", "--noheader", "--jobs=" + ids,
                               "--format=%i %T"});
  std::vector<std::pair<std::string, std::string>> out;
  if (ran.status != 0) return out;
  std::istringstream in(ran.output);
  for (std::string task, state; in >> task >> state;) out.emplace_back(task, state);
  return out;
}

std::string submit_to_slurm(const std::string& script_path) {
  const Ran ran = run_program({sbatch_program(), "--parsable", script_path});
  const std::string line = first_line(ran.output);
  // --parsable: "JOBID" or "JOBID;CLUSTER".
  const std::string id = line.substr(0, line.find(';'));
  if (ran.status != 0 || id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
    throw InputError("--launcher", "sbatch refused " + script_path + ": " + first_line(ran.output));
  return id;
}

}  // namespace lowband::sweep
