#include "runtime/report/run_dir_reader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "common/error.h"
#include "runtime/scenario/load.h"
#include "runtime/scenario/units.h"

namespace lowband::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot read the file (missing?)");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

json read_json_object(const std::string& path) {
  json doc;
  try {
    doc = json::parse(read_text(path));
  } catch (const json::parse_error& e) {
    throw InputError(path, std::string("invalid JSON: ") + e.what());
  }
  if (!doc.is_object()) throw InputError(path, "expected a JSON object, got " + std::string(doc.type_name()));
  return doc;
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::stringstream in(line);
  while (std::getline(in, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

double parse_cell(const std::string& cell, const std::string& place) {
  if (cell == "nan" || cell == "-nan") return std::numeric_limits<double>::quiet_NaN();
  try {
    size_t used = 0;
    const double x = std::stod(cell, &used);
    if (used == cell.size()) return x;
  } catch (const std::exception&) {
  }
  throw InputError(place, "expected a number, got \"" + cell + "\"");
}

std::vector<CurveRow> read_curve(const std::string& path) {
  std::stringstream in(read_text(path));
  std::string line;
  if (!std::getline(in, line)) throw InputError(path, "empty file (expected a header line)");
  const std::vector<std::string> header = split_csv_line(line);
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  for (const char* needed : {"step", "sim_seconds", "train_loss"})
    if (!column.count(needed)) throw InputError(path, std::string("no \"") + needed + "\" column in the header");
  const bool has_val = column.count("val_loss") > 0;
  std::vector<CurveRow> rows;
  for (int line_no = 2; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    const std::string place = path + ":" + std::to_string(line_no);
    const std::vector<std::string> cells = split_csv_line(line);
    if (cells.size() != header.size())
      throw InputError(place, std::to_string(cells.size()) + " cells, the header has " + std::to_string(header.size()));
    CurveRow row;
    row.step = int(parse_cell(cells[column["step"]], place));
    row.sim_seconds = parse_cell(cells[column["sim_seconds"]], place);
    row.train_loss = parse_cell(cells[column["train_loss"]], place);
    if (has_val && !cells[column["val_loss"]].empty()) row.val_loss = parse_cell(cells[column["val_loss"]], place);
    rows.push_back(row);
  }
  return rows;
}

// From steps.jsonl: each curve row's cumulative_bytes_all_ranks, where every step up
// to the row's has "bytes_sent_all_ranks" (runs written before it existed have none),
// and the recall task's answer accuracies where a step has them.
void read_steps(const std::string& path, LoadedRun& run) {
  std::ifstream in(path);
  if (!in) return;
  std::map<int, double> bytes_of_step;
  bool all_bytes = true;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    const json step = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (step.is_discarded() || !step.is_object())
      throw InputError(path + ":" + std::to_string(line_no), "not a JSON object");
    if (!step.contains("step") || !step["step"].is_number_integer()) {
      all_bytes = false;
      continue;
    }
    const int k = step["step"].get<int>();
    const json all = step.value("bytes_sent_all_ranks", json());
    if (all.is_object() && all.value("total", json()).is_number()) bytes_of_step[k] = all["total"].get<double>();
    else all_bytes = false;
    const json remote = step.value("val_answer_remote_accuracy", json()), local = step.value("val_answer_local_accuracy", json());
    if (remote.is_number() && local.is_number()) run.answers.push_back({k, 0, remote.get<double>(), local.get<double>()});
  }
  for (AnswerPoint& a : run.answers) {  // the time the loss curve has at that step (projected or not)
    const auto row = std::lower_bound(run.curve.begin(), run.curve.end(), a.step,
                                      [](const CurveRow& r, int step) { return r.step < step; });
    if (row != run.curve.end() && row->step == a.step) a.sim_seconds = row->sim_seconds;
  }
  if (!all_bytes) return;
  double sum = 0;
  int counted = 0;
  for (CurveRow& row : run.curve) {
    for (; counted < row.step; ++counted) {
      const auto it = bytes_of_step.find(counted + 1);
      if (it == bytes_of_step.end()) return;
      sum += it->second;
    }
    row.cumulative_bytes_all_ranks = sum;
  }
}

// "runs/a/" -> "a".
std::string dir_name(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

std::string setting_text(const json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

std::string settings_text(const json& settings, bool skip_bandwidth) {
  std::string out;
  if (!settings.is_object()) return out;
  for (const auto& [key, value] : settings.items()) {
    const bool is_bandwidth = key == "bandwidth" || (key.size() > 10 && key.substr(key.size() - 10) == ".bandwidth");
    if (skip_bandwidth && (is_bandwidth || key == "training.seed")) continue;  // a series spans seeds too
    out += (out.empty() ? "" : ", ") + key + "=" + setting_text(value);
  }
  return out;
}

// Every "bandwidth" string anywhere under `node` (links, clusters, WAN, overrides).
void collect_bandwidths(const json& node, std::vector<std::string>& out) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if (key == "bandwidth" && value.is_string()) out.push_back(value.get<std::string>());
      else collect_bandwidths(value, out);
    }
  } else if (node.is_array()) {
    for (const auto& value : node) collect_bandwidths(value, out);
  }
}

std::string ratio_text(const json& c, const char* ratio_key, const char* rank_key) {
  if (c.contains(ratio_key) && c[ratio_key].is_number()) return setting_text(c[ratio_key]);
  if (c.contains(rank_key) && c[rank_key].is_number()) return "rank " + setting_text(c[rank_key]);
  return "?";
}

}  // namespace

LoadedRun load_run_dir(const std::string& dir) {
  if (!fs::is_directory(dir)) throw InputError(dir, "not a directory");
  LoadedRun run;
  run.dir = dir;
  run.scenario = read_json_object(dir + "/scenario.json");
  upgrade_recorded_scenario(run.scenario);  // as the run ran: keys whose defaults changed since
  run.summary = read_json_object(dir + "/summary.json");
  run.curve = read_curve(dir + "/curve.csv");
  read_steps(dir + "/steps.jsonl", run);
  if (run.summary.contains("scenario") && run.summary["scenario"].is_string())
    run.name = run.summary["scenario"].get<std::string>();
  else if (run.scenario.contains("name") && run.scenario["name"].is_string())
    run.name = run.scenario["name"].get<std::string>();
  else
    run.name = dir_name(dir);
  return run;
}

namespace {

// One path of load_runs: a run directory, or a sweep directory's finished points.
void load_path(const std::string& path, LoadedRuns& loaded) {
  const std::string index_path = path + "/index.json";
  if (!fs::is_directory(path)) throw InputError(path, "not a directory");
  if (!fs::exists(index_path)) {
    if (!fs::exists(path + "/summary.json"))
      throw InputError(path, "neither a run directory (no summary.json) nor a sweep directory (no index.json)");
    loaded.runs.push_back(load_run_dir(path));
    return;
  }
  const json index = read_json_object(index_path);
  const std::string sweep = index.contains("sweep") ? setting_text(index["sweep"]) : dir_name(path);
  if (!index.contains("points") || !index["points"].is_array())
    throw InputError(index_path, "\"points\" must be an array");
  for (size_t i = 0; i < index["points"].size(); ++i) {
    const json& point = index["points"][i];
    const std::string where = index_path + ": points." + std::to_string(i);
    if (!point.is_object() || !point.contains("run_dir") || !point["run_dir"].is_string())
      throw InputError(where, "expected an object with a \"run_dir\" string");
    const std::string dir = (fs::path(path) / point["run_dir"].get<std::string>()).string();
    const bool has_status = point.contains("status");
    const std::string status = has_status ? setting_text(point["status"]) : "";
    if (has_status ? status != "done" : !fs::exists(dir + "/summary.json")) {
      loaded.notes.push_back("sweep " + sweep + ": left out " + dir + " (" +
                             (has_status ? "status " + status : "no status and no summary.json") + ")");
      continue;
    }
    LoadedRun run = load_run_dir(dir);
    run.sweep = sweep;
    run.sweep_settings = point.contains("settings") && point["settings"].is_object() ? point["settings"] : json::object();
    loaded.runs.push_back(std::move(run));
  }
}

}  // namespace

LoadedRuns load_runs(const std::vector<std::string>& paths, const std::string& place,
                     const std::vector<std::string>& labels, const std::string& labels_place) {
  if (!labels.empty() && labels.size() != paths.size())
    throw InputError(labels_place, std::to_string(labels.size()) + " labels for " + std::to_string(paths.size()) +
                                       " directories: expected one per directory");
  LoadedRuns loaded;
  for (size_t p = 0; p < paths.size(); ++p) {
    const std::string& path = paths[p];
    const size_t first = loaded.runs.size();
    load_path(path, loaded);
    if (labels.empty()) continue;
    for (size_t i = first; i < loaded.runs.size(); ++i) {
      loaded.runs[i].name = labels[p];
      if (!loaded.runs[i].sweep.empty()) loaded.runs[i].sweep = labels[p];
    }
  }
  if (loaded.runs.empty()) throw InputError(place, "no finished run among the directories given");
  assign_labels(loaded.runs);
  return loaded;
}

void assign_labels(std::vector<LoadedRun>& runs) {
  std::map<std::string, int> count;
  for (const LoadedRun& r : runs) ++count[r.name];
  std::set<std::string> taken;
  for (LoadedRun& r : runs) {
    std::string label = r.name;
    if (count[r.name] > 1) {
      const std::string settings = settings_text(r.sweep_settings, false);
      label += " (" + (settings.empty() ? dir_name(r.dir) : settings) + ")";
    }
    const std::string base = label;
    for (int n = 2; taken.count(label); ++n) label = base + " #" + std::to_string(n);
    taken.insert(label);
    r.label = label;
  }
}

json timed_network(const LoadedRun& run) {
  const json& s = run.scenario;
  if (s.contains("projection") && s["projection"].is_object() && s["projection"].contains("scenario")) {
    const json& projected = s["projection"]["scenario"];
    if (projected.is_object() && projected.contains("network")) return projected["network"];
    if (projected.is_string()) {
      const json builtin = json::parse(builtin_scenario_text(projected.get<std::string>()));
      if (builtin.contains("network")) return builtin["network"];
    }
  }
  return s.contains("network") ? s["network"] : json();
}

double run_bandwidth_bytes_per_s(const LoadedRun& run) {
  const std::string place = run.dir + "/scenario.json: network";
  const json network = timed_network(run);
  if (!network.is_object()) throw InputError(place, "no network section");
  if (network.contains("bandwidth") && network["bandwidth"].is_string())
    return units::parse_bandwidth(network["bandwidth"].get<std::string>(), place + ".bandwidth");
  std::vector<std::string> found;
  collect_bandwidths(network, found);
  if (found.empty()) throw InputError(place, "no link bandwidth found");
  double slowest = std::numeric_limits<double>::infinity();
  for (const std::string& text : found) slowest = std::min(slowest, units::parse_bandwidth(text, place));
  return slowest;
}

namespace {

// compression.method (K/V) and compression.boundary.method (pipeline stage
// boundaries), "none" where absent.
std::string kv_method(const json& s) {
  if (!s.contains("compression") || !s["compression"].is_object()) return "none";
  const json& c = s["compression"];
  return c.contains("method") ? setting_text(c["method"]) : "none";
}
// With parallel.replicas, the replicas that set compress_boundaries ("" when none
// does); "all" without that array (every pipeline follows compression.boundary).
std::string compressing_replicas(const json& s) {
  if (!s.contains("parallel") || !s["parallel"].is_object() || !s["parallel"].contains("replicas") ||
      !s["parallel"]["replicas"].is_array())
    return "all";
  const json& replicas = s["parallel"]["replicas"];
  std::string out;
  int count = 0;
  for (size_t q = 0; q < replicas.size(); ++q)
    if (replicas[q].is_object() && replicas[q].value("compress_boundaries", false))
      out += (count++ ? ", " : "") + std::to_string(q);
  if (count == int(replicas.size())) return "all";
  return count == 0 ? "" : (count == 1 ? "replica " : "replicas ") + out;
}
std::string boundary_method(const json& s) {
  if (!s.contains("compression") || !s["compression"].is_object()) return "none";
  const json& c = s["compression"];
  if (!c.contains("boundary") || !c["boundary"].is_object() || !c["boundary"].contains("method")) return "none";
  if (compressing_replicas(s).empty()) return "none";  // no replica applies it
  return setting_text(c["boundary"]["method"]);
}

std::string boundary_label(const json& b) {
  const std::string method = setting_text(b["method"]);
  if (method == "subspace" || method == "lowrank" || method == "embedding_residual")
    return "boundary " + method + " k=" + (b.contains("rank") ? setting_text(b["rank"]) : "?");
  if (method == "topk") return "boundary topk " + (b.contains("topk_fraction") ? setting_text(b["topk_fraction"]) : "?");
  if (method == "quantize") return "boundary quantize " + (b.contains("bits") ? setting_text(b["bits"]) : "?") + "-bit";
  return "boundary " + method;
}

// parallel.data_sync of a data-parallel run: "" for none or the every-step
// all-reduce, else the method, its inner steps and (sparseloco) its message.
std::string data_sync_label(const json& s) {
  if (!s.contains("parallel") || !s["parallel"].is_object() || !s["parallel"].contains("data_sync")) return "";
  const json& d = s["parallel"]["data_sync"];
  if (!d.is_object() || !d.contains("method")) return "";
  const std::string method = setting_text(d["method"]);
  if (method == "all_reduce") return "";
  auto field = [&](const char* key) { return d.contains(key) ? setting_text(d[key]) : std::string("?"); };
  std::string label = method + " H=" + field("inner_steps");
  if (method == "sparseloco")
    label += " top-" + field("topk_per_chunk") + "/" + field("chunk") + " " + field("value_bits") + "-bit";
  return label;
}

// compression.weight_sync other than all_reduce: "weights lowrank_grad 0.05", "weights sparse 0.05 every 10".
std::string weight_sync_label(const json& s) {
  if (!s.contains("compression") || !s["compression"].is_object()) return "";
  const json& c = s["compression"];
  const std::string method = c.contains("weight_sync") ? setting_text(c["weight_sync"]) : "all_reduce";
  if (method == "all_reduce") return "";
  std::string label = "weights " + method + (c.contains("sync_fraction") ? " " + setting_text(c["sync_fraction"]) : "");
  if (method == "sparse" && c.contains("sync_every") && setting_text(c["sync_every"]) != "1")
    label += " every " + setting_text(c["sync_every"]);
  return label;
}

}  // namespace

bool is_uncompressed(const LoadedRun& run) {
  return kv_method(run.scenario) == "none" && boundary_method(run.scenario) == "none" &&
         weight_sync_label(run.scenario).empty() && data_sync_label(run.scenario).rfind("sparseloco", 0) != 0;
}

std::string compression_label(const LoadedRun& run) {
  const std::string settings = settings_text(run.sweep_settings, true);
  if (!settings.empty()) return settings;
  std::string sync = weight_sync_label(run.scenario);
  const std::string data_sync = data_sync_label(run.scenario);
  sync += (sync.empty() || data_sync.empty() ? "" : ", ") + data_sync;
  if (kv_method(run.scenario) == "none" && boundary_method(run.scenario) == "none")
    return sync.empty() ? "uncompressed" : sync;
  const json& c = run.scenario["compression"];
  const std::string method = kv_method(run.scenario);
  std::string label;
  if (method == "mos") label = "mos K " + ratio_text(c, "k_ratio", "k_rank") + " / V " + ratio_text(c, "v_ratio", "v_rank");
  else if (method == "topk") label = "topk " + (c.contains("topk_fraction") ? setting_text(c["topk_fraction"]) : "?");
  else if (method == "quantize") label = "quantize " + (c.contains("bits") ? setting_text(c["bits"]) : "?") + "-bit";
  else if (method != "none") label = method;
  // A baseline's uncompressed parts (MoS says its own through its kept ranks and warm-up).
  if (method == "topk" || method == "quantize" || method == "drop") {
    if (c.contains("warmup_steps") && c["warmup_steps"].is_number_integer() && c["warmup_steps"].get<int64_t>() > 0)
      label += " after " + setting_text(c["warmup_steps"]) + " uncompressed steps";
    if (c.contains("compress_final_layer") && c["compress_final_layer"] == false) label += ", final layer uncompressed";
  }
  if (boundary_method(run.scenario) != "none") {
    const std::string who = compressing_replicas(run.scenario);
    label += (label.empty() ? "" : ", ") + boundary_label(c["boundary"]) + (who == "all" ? "" : " (" + who + ")");
  }
  if (!sync.empty()) label += ", " + sync;
  return label;
}

std::optional<double> summary_number(const LoadedRun& run, const std::string& dotted_path) {
  const json* node = &run.summary;
  std::stringstream parts(dotted_path);
  std::string part;
  while (std::getline(parts, part, '.')) {
    if (!node->is_object() || !node->contains(part)) return std::nullopt;
    node = &(*node)[part];
  }
  if (!node->is_number()) return std::nullopt;
  const double x = node->get<double>();
  return std::isfinite(x) ? std::optional<double>(x) : std::nullopt;
}

std::optional<TimeProjection> time_projection(const LoadedRun& run) {
  const json& s = run.summary;
  if (!s.contains("time_projection") || !s["time_projection"].is_object()) return std::nullopt;
  const json& p = s["time_projection"];
  TimeProjection projection;
  projection.scenario = p.contains("scenario") ? setting_text(p["scenario"]) : "(unnamed scenario)";
  if (p.contains("description") && p["description"].is_string()) projection.description = p["description"].get<std::string>();
  if (p.contains("bytes_per_rank_per_step") && p["bytes_per_rank_per_step"].is_object()) {
    const json& total = p["bytes_per_rank_per_step"].value("total", json());
    if (total.is_number()) projection.bytes_per_step = total.get<double>();
  }
  return projection;
}

}  // namespace lowband::report
