#include "runtime/sweep/worker.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/atomic_file.h"
#include "common/error.h"
#include "runtime/scenario/load.h"
#include "runtime/train/run.h"

namespace lowband::sweep {
namespace {

using nlohmann::json;

void write_result(const std::string& group_file, const GroupResult& r) {
  write_file_atomically(result_path(group_file), json{{"ok", r.ok}, {"message", r.message}}.dump(2) + "\n");
}

}  // namespace

void write_group_file(const std::string& path, const std::vector<const grid::SweepPoint*>& points,
                      const std::vector<std::string>& out_dirs, int threads, bool threads_forced, bool resume) {
  json list = json::array();
  for (size_t i = 0; i < points.size(); ++i)
    list.push_back({{"scenario", to_json(points[i]->scenario)},
                    {"source", points[i]->scenario.source},
                    {"out_dir", out_dirs[i]}});
  write_file_atomically(path, json{{"threads", threads}, {"threads_forced", threads_forced}, {"resume", resume}, {"points", list}}.dump(2) + "\n");
}

void die_with_parent(int parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(3);  // it died before the line above: nobody waits for this training
}

std::string result_path(const std::string& group_file) {
  const std::string suffix = ".json";
  const bool has = group_file.size() >= suffix.size() &&
                   group_file.compare(group_file.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (has ? group_file.substr(0, group_file.size() - suffix.size()) : group_file) + ".result.json";
}

GroupResult read_group_result(const std::string& group_file) {
  std::ifstream in(result_path(group_file));
  const json j = in ? json::parse(in, nullptr, /*allow_exceptions=*/false) : json(nullptr);
  if (!j.is_object()) return {false, "the worker wrote no result"};
  return {j.value("ok", false), j.value("message", std::string("the worker gave no message"))};
}

int run_group_worker(const std::string& group_file) {
  GroupResult result;
  try {
    std::ifstream in(group_file);
    if (!in) throw InputError(group_file, "cannot read the sweep group file");
    const json group = json::parse(in);
    // run_training sets it before any OpenMP or oneDNN code runs in this process.
    const int threads = group.at("threads").get<int>();
    const json& points = group.at("points");
    if (!points.is_array() || points.empty()) throw InputError(group_file, "no points in the sweep group");
    const auto scenario_of = [](const json& p) {
      return parse_scenario(p.at("scenario"), p.at("source").get<std::string>());
    };
    const Scenario trained = scenario_of(points[0]);
    train::RunOptions options;
    options.out_dir = points[0].at("out_dir").get<std::string>();
    options.log = &std::cout;
    options.threads = std::max(threads, 0);
    options.threads_forced = threads > 0 && group.value("threads_forced", false);
    for (size_t i = 1; i < points.size(); ++i)
      options.also_timed_on.push_back({scenario_of(points[i]), points[i].at("out_dir").get<std::string>()});
    // A training an earlier sweep left unfinished continues from its checkpoint (with
    // the thread count it records, which the "resuming" line names); one whose
    // checkpoint does not fit (other targets, damaged) starts afresh.
    options.resume = group.value("resume", false);
    if (options.resume)
      std::cout << "continuing " << trained.name << " from its checkpoint; also timed on ";
    else
      std::cout << "training " << trained.name << " with " << threads << " OpenMP threads; also timed on ";
    std::cout << options.also_timed_on.size() << " more network(s)\n";
    train::RunResult r;
    try {
      r = train::run_training(trained, options);
    } catch (const InputError& e) {
      if (!options.resume) throw;
      std::cout << "cannot resume (" << e.what() << "): training from step 0 with " << threads << " OpenMP threads\n";
      for (const json& p : points) std::filesystem::remove_all(p.at("out_dir").get<std::string>());
      options.resume = false;
      r = train::run_training(trained, options);
    }
    if (r.resumed_at_step > 0) std::cout << "resumed at step " << r.resumed_at_step << "\n";
    result = {!r.diverged, r.message};
  } catch (const std::exception& e) {
    result = {false, e.what()};
  }
  std::cout << (result.ok ? "done" : "failed: " + result.message) << "\n" << std::flush;
  write_result(group_file, result);
  return result.ok ? 0 : 3;
}

}  // namespace lowband::sweep
