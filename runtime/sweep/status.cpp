#include "runtime/sweep/status.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "runtime/sweep/slurm.h"
#include "runtime/train/run_dir.h"

namespace lowband::sweep {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Whether a writer holds DIR's lock now: the lock file is tried without waiting and,
// when free, let go at once (never created: a directory nobody locked has none).
bool locked(const fs::path& dir) {
  const int fd = ::open((dir / train::kLockFile).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // Exclusive: a sweep's array tasks hold the sweep directory shared (run_dir.h).
  const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // releases it, if this took it
  return held;
}

json read_json_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? json(nullptr) : j;
}

std::string last_line(const std::string& text) {
  std::string s = text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  const size_t at = s.rfind('\n');
  return at == std::string::npos ? s : s.substr(at + 1);
}

std::string steps_text(const PointProgress& p) {
  if (!p.steps_done || !p.steps_planned) return "";
  return "step " + std::to_string(*p.steps_done) + "/" + std::to_string(*p.steps_planned);
}

}  // namespace

int SweepStatus::count(const std::string& state) const {
  return int(std::count_if(points.begin(), points.end(), [&](const PointProgress& p) { return p.state == state; }));
}

SweepStatus read_sweep_status(const std::string& dir) {
  const json index = read_json_file(fs::path(dir) / "index.json");
  if (!index.is_object() || !index.contains("points") || !index["points"].is_array())
    throw InputError("--status", dir + " is not a sweep directory (no readable index.json)");
  SweepStatus s;
  s.dir = dir;
  s.name = index.value("sweep", std::string());
  s.trainings = index.value("trainings", 0);
  s.sweep_running = locked(dir);
  // Which run directory trains each group: its first point's (runner.cpp).
  std::map<int, std::string> trainer;
  for (const json& p : index["points"])
    if (p.is_object() && p.contains("group") && p["group"].is_number_integer())
      trainer.emplace(p["group"].get<int>(), p.value("run_dir", std::string()));
  for (const json& p : index["points"]) {
    if (!p.is_object()) continue;
    PointProgress out;
    out.run_dir = p.value("run_dir", std::string());
    const int group = p.contains("group") && p["group"].is_number_integer() ? p["group"].get<int>() : 0;
    out.trained_in = trainer.count(group) ? trainer[group] : out.run_dir;
    const std::string status = p.value("status", std::string("pending"));
    const fs::path training = fs::path(dir) / out.trained_in;
    const json summary = read_json_file(training / "summary.json");
    if (summary.is_object()) {
      if (summary.contains("steps_done") && summary["steps_done"].is_number_integer())
        out.steps_done = summary["steps_done"].get<int64_t>();
      if (summary.contains("steps_planned") && summary["steps_planned"].is_number_integer())
        out.steps_planned = summary["steps_planned"].get<int64_t>();
    }
    if (status == "done" || status == "failed") {
      out.state = status;
      if (status == "failed") {
        out.message = last_line(p.value("message", std::string()));
        const fs::path log = fs::path(dir) / "groups" / ("g" + std::to_string(group) + ".log");
        std::error_code ec;
        if (group > 0 && fs::is_regular_file(log, ec)) out.log = log.string();
      }
    } else if (locked(training)) {
      out.state = "running";
    } else {
      out.state = out.steps_done && *out.steps_done > 0 ? "stopped" : "waiting";
    }
    s.points.push_back(std::move(out));
  }
  std::ifstream jobs(fs::path(dir) / "slurm" / "jobs");
  for (std::string id, trainings; jobs >> id >> trainings;) s.slurm_jobs.emplace_back(id, trainings);
  if (!s.slurm_jobs.empty()) {
    std::vector<std::string> ids;
    for (const auto& [id, trainings] : s.slurm_jobs) ids.push_back(id);
    s.slurm_tasks = slurm_queue(ids);
  }
  return s;
}

std::string format_sweep_status(const SweepStatus& s) {
  std::ostringstream out;
  out << "sweep " << s.name << " (" << s.dir << "): " << s.points.size() << " points, " << s.trainings
      << " trainings; " << s.count("done") << " done, " << s.count("running") << " running, " << s.count("failed")
      << " failed, " << s.count("stopped") << " stopped, " << s.count("waiting") << " waiting; "
      << (s.sweep_running ? "a lowband sweep is running in it" : "no lowband sweep is running in it") << "\n";
  size_t width = 5;
  for (const PointProgress& p : s.points) width = std::max(width, p.run_dir.size());
  for (const PointProgress& p : s.points) {
    out << p.run_dir << std::string(width - p.run_dir.size() + 2, ' ') << p.state;
    const std::string steps = steps_text(p);
    if ((p.state == "running" || p.state == "stopped") && !steps.empty()) out << ", " << steps;
    if (p.trained_in != p.run_dir && p.state != "done") out << " (trains in " << p.trained_in << ")";
    if (p.state == "failed") out << ": " << p.message << (p.log.empty() ? "" : " (log: " + p.log + ")");
    out << "\n";
  }
  for (const auto& [id, trainings] : s.slurm_jobs) out << "slurm job array " << id << ": trainings " << trainings << "\n";
  for (const auto& [task, state] : s.slurm_tasks) out << "  slurm task " << task << ": " << state << "\n";
  if (s.count("stopped") > 0 && !s.sweep_running)
    out << "stopped points continue from their last checkpoint with: lowband sweep --resume " << s.dir << "\n";
  return out.str();
}

}  // namespace lowband::sweep
