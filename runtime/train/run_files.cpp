#include "runtime/train/run_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/atomic_file.h"
#include "common/error.h"

namespace lowband::train {
namespace {

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

nlohmann::json numbers_or_null(const std::vector<double>& xs) {
  nlohmann::json out = nlohmann::json::array();
  for (double x : xs) out.push_back(number_or_null(x));
  return out;
}

nlohmann::json kv_errors_json(const std::vector<double>& k, const std::vector<double>& v) {
  return {{"k", numbers_or_null(k)}, {"v", numbers_or_null(v)}};
}

std::string csv_number(double x) {
  if (!std::isfinite(x)) return "nan";
  std::ostringstream out;
  out.precision(9);
  out << x;
  return out.str();
}

}  // namespace

RunFiles::RunFiles(std::string dir, bool writes) : dir_(std::move(dir)), writes_(writes) {
  if (!writes_) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec || !std::filesystem::is_directory(dir_))
    throw InputError("--out", "cannot create the run directory " + dir_ + ": " + ec.message());
}

void RunFiles::write_scenario(const std::string& json) const {
  if (writes_) write_file_atomically(dir_ + "/scenario.json", json);
}
void RunFiles::write_curve(const std::string& csv) const {
  if (writes_) write_file_atomically(dir_ + "/curve.csv", csv);
}
void RunFiles::write_summary(const nlohmann::json& s) const {
  if (!writes_) return;
  write_file_atomically(dir_ + "/summary.json", s.dump(2) + "\n");
}

void RunFiles::remove_steps() const {
  if (!writes_) return;
  std::error_code ec;
  std::filesystem::remove(dir_ + "/steps.jsonl", ec);
  if (ec) throw InputError(dir_ + "/steps.jsonl", "cannot remove the stopped run's steps: " + ec.message());
}

void RunFiles::append(const char* file, const std::string& lines) const {
  if (!writes_) return;
  // One write of whole lines: a reader sees complete lines only. A write cut short
  // (a full disk) is undone, so the file still ends with a whole line.
  const std::string path = dir_ + "/" + file;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(path, std::string("cannot write: ") + std::strerror(errno));
  const off_t before = ::lseek(fd, 0, SEEK_END);
  const bool written = write_all(fd, lines.data(), lines.size());
  const int err = errno;
  if (!written && before >= 0) (void)::ftruncate(fd, before);
  if (::close(fd) != 0 || !written) throw InputError(path, std::string("cannot write: ") + std::strerror(written ? errno : err));
}

void RunFiles::append_step(const nlohmann::json& line) const { append("steps.jsonl", line.dump() + "\n"); }
void RunFiles::append_curve_row(const std::string& row) const { append("curve.csv", row); }

void RunTotals::add(const PendingStep& p, const ReplayedStep& replayed, const RunFiles& files) {
  const parallel::StepRecord& rec = p.record;
  const sim::ReplayResult& replay = replayed.replay;
  ++steps_done;
  sim_total_seconds += replayed.seconds;
  sim_lost_seconds += replayed.lost_seconds;
  sim_restarts += replayed.restarts;
  step_wall_seconds += p.wall_seconds;
  record_wall_seconds += rec.record_wall_seconds;
  last_train_loss = rec.loss;
  if (p.val_loss) last_val_loss = p.val_loss;
  if (p.val_loss && !p.val_answers.empty()) last_val_answers = p.val_answers;

  // Per kind: the busiest rank's bytes (what sets a link's time) and all ranks'
  // together (what the run put on the network: loss against bytes). A relay is
  // no rank: what it sends on is its own figure.
  nlohmann::json bytes = nlohmann::json::object(), bytes_all = nlohmann::json::object();
  std::vector<std::string> kinds = traffic.kinds;
  kinds.insert(kinds.end(), {"grad_sync", "pseudo_grad", ""});
  const bool relay_in_graph = relay_node >= 0 && relay_node < rec.graph.ranks();
  for (const std::string& kind : kinds) {
    double most = 0, all = 0;
    for (int r = 0; r < rec.graph.ranks(); ++r) {
      if (relay_in_graph && r == relay_node) continue;
      const double sent = rec.graph.bytes_sent(r, kind);
      most = std::max(most, sent);
      all += sent;
    }
    const std::string name = kind.empty() ? "total" : kind;
    bytes[name] = most;
    bytes_all[name] = all;
    bytes_per_rank_sum[name] += most;
    bytes_all_ranks_sum[name] += all;
  }
  kv_bytes_sent += traffic.sent(rec.graph);
  peak_bytes_per_rank = std::max(peak_bytes_per_rank, bytes["total"].get<double>());
  if (links) last_bound = physical_bound(*links, {&rec.graph}, {1.0}, replayed.seconds, tokens_per_step);
  double compute = 0;
  for (double c : replay.rank_compute_busy_seconds) compute = std::max(compute, c);

  nlohmann::json line = {{"step", steps_done},
                         {"train_loss", number_or_null(rec.loss)},
                         {"lr", rec.lr},
                         {"grad_norm", number_or_null(rec.grad_norm)},
                         {"weight_sync", rec.weight_sync},
                         {"sim_step_seconds", replayed.seconds},
                         {"sim_total_seconds", sim_total_seconds},
                         {"bytes_sent_per_rank", bytes},
                         {"bytes_sent_all_ranks", bytes_all},
                         {"compute_seconds", compute},
                         {"exposed_comm_seconds", replay.exposed_comm_seconds},
                         {"wall_seconds", p.wall_seconds},
                         {"record_wall_seconds", rec.record_wall_seconds}};
  if (changing_network) {
    line["sim_lost_seconds"] = replayed.lost_seconds;
    line["sim_lost_total_seconds"] = sim_lost_seconds;
  }
  if (restarting) line["sim_restarts"] = replayed.restarts;
  if (!p.round_made_it.empty()) {
    nlohmann::json in = nlohmann::json::array(), late = nlohmann::json::array();
    for (size_t q = 0; q < p.round_made_it.size(); ++q) (p.round_made_it[q] ? in : late).push_back(q);
    line["round_replicas"] = in;
    line["round_late_replicas"] = late;
    line["round_wait_seconds"] = p.round_wait_seconds;
    ++rounds_closed;
    replicas_dropped += int(late.size());
  }
  if (relay_node >= 0) line["bytes_sent_relay"] = relay_in_graph ? rec.graph.bytes_sent(relay_node, "") : 0.0;
  if (p.val_loss) line["val_loss"] = number_or_null(*p.val_loss);
  if (!p.val_loss_per_replica.empty()) {
    line["val_loss_per_replica"] = nlohmann::json::array();
    for (double loss : p.val_loss_per_replica) line["val_loss_per_replica"].push_back(number_or_null(loss));
  }
  for (const auto& [key, value] : p.val_answers.items()) line[key] = value;
  kv_recon_k.push_back(rec.kv_reconstruction_error_k);
  kv_recon_v.push_back(rec.kv_reconstruction_error_v);
  if (!rec.kv_reconstruction_error_k.empty() || !rec.kv_reconstruction_error_v.empty())
    line["kv_reconstruction_error"] = kv_errors_json(rec.kv_reconstruction_error_k, rec.kv_reconstruction_error_v);
  if (!rec.kv_owner_receiver_error_k.empty()) {
    line["kv_owner_receiver_error"] = kv_errors_json(rec.kv_owner_receiver_error_k, rec.kv_owner_receiver_error_v);
    for (double e : rec.kv_owner_receiver_error_k) kv_owner_receiver_max = std::max(kv_owner_receiver_max, e);
    for (double e : rec.kv_owner_receiver_error_v) kv_owner_receiver_max = std::max(kv_owner_receiver_max, e);
  }
  files.append_step(line);
  const std::string row = std::to_string(steps_done) + "," + csv_number(sim_total_seconds) + "," +
                          csv_number(sim_total_seconds / 3600.0) + "," + csv_number(step_wall_seconds) + "," +
                          csv_number(rec.loss) + "," + (p.val_loss ? csv_number(*p.val_loss) : "") + "," +
                          csv_number(rec.lr) + "," + csv_number(bytes["total"].get<double>()) + "\n";
  curve_csv += row;  // kept whole for checkpoints, which rewrite the file on resume
  files.append_curve_row(row);
}

nlohmann::json RunTotals::summary_json() const {
  nlohmann::json s = header;
  const double n = std::max(steps_done, 1);
  nlohmann::json bytes = nlohmann::json::object();
  for (const auto& [kind, sum] : bytes_per_rank_sum) bytes[kind] = sum / n;
  nlohmann::json bytes_all = nlohmann::json::object();
  for (const auto& [kind, sum] : bytes_all_ranks_sum) bytes_all[kind] = sum / n;
  const double plain = uncompressed_kv_bytes_per_step * steps_done;
  s["steps_planned"] = steps_planned;
  s["steps_done"] = steps_done;
  s["diverged"] = diverged;
  if (diverged) s["message"] = message;
  s["final_train_loss"] = number_or_null(last_train_loss);
  s["final_train_perplexity"] = number_or_null(std::exp(last_train_loss));
  s["final_val_loss"] = last_val_loss ? number_or_null(*last_val_loss) : nlohmann::json(nullptr);
  s["final_val_perplexity"] = last_val_loss ? number_or_null(std::exp(*last_val_loss)) : nlohmann::json(nullptr);
  for (const auto& [key, value] : last_val_answers.items()) s["final_" + key] = value;  // final_val_answer_*
  s["tokens_per_step"] = tokens_per_step;
  s["sim_total_seconds"] = sim_total_seconds;
  s["sim_seconds_per_step"] = sim_total_seconds / n;
  if (changing_network) {
    // network.dynamics: what the run's time would have been on the nominal network.
    s["sim_lost_seconds"] = sim_lost_seconds;
    s["sim_nominal_total_seconds"] = sim_total_seconds - sim_lost_seconds;
  }
  if (restarting) s["sim_restarts"] = sim_restarts;
  if (rounds_closed > 0) {
    s["rounds_closed"] = rounds_closed;
    s["replicas_dropped"] = replicas_dropped;  // summed over the rounds
  }
  s["sim_tokens_per_s"] = sim_total_seconds > 0 ? tokens_per_step * steps_done / sim_total_seconds : 0.0;
  s["process_tokens_per_s"] = step_wall_seconds > 0 ? tokens_per_step * steps_done / step_wall_seconds : 0.0;
  s["process_step_wall_seconds"] = step_wall_seconds / n;
  s["bytes_sent_per_rank_per_step"] = bytes;  // max over ranks, mean over steps
  s["bytes_sent_per_rank_peak_step"] = peak_bytes_per_rank;  // max over ranks, max over steps
  s["bytes_sent_all_ranks_per_step"] = bytes_all;  // sum over ranks, mean over steps
  if (last_bound) s["bound_last_step"] = to_json(*last_bound);  // step_over_bound: that step's simulated seconds
  // Measured: what the codec's real messages (K/V and dK/dV, or the pipeline
  // boundaries' both ways) carried over what they would have carried uncompressed.
  // Nothing to measure where the layout has no such traffic (one context rank).
  if (plain > 0) {
    s[traffic.name + "_bytes_ratio"] = kv_bytes_sent / plain;
    s[traffic.name + "_bytes_saved_fraction"] = 1.0 - kv_bytes_sent / plain;
  }
  if (!kv_recon_k.empty() && (!kv_recon_k.back().empty() || !kv_recon_v.back().empty())) {
    s["kv_reconstruction_error"] = kv_errors_json(kv_recon_k.back(), kv_recon_v.back());  // the last step's
    // Mean over the compressed steps among the last 10 % (at least one), less noisy than one step.
    const size_t window = std::max<size_t>(1, kv_recon_k.size() / 10);
    std::vector<double> k_sum(kv_recon_k.back().size()), v_sum(kv_recon_v.back().size());
    int counted = 0;
    for (size_t i = kv_recon_k.size() - window; i < kv_recon_k.size(); ++i) {
      if (kv_recon_k[i].size() != k_sum.size() || kv_recon_v[i].size() != v_sum.size()) continue;
      for (size_t l = 0; l < k_sum.size(); ++l) k_sum[l] += kv_recon_k[i][l];
      for (size_t l = 0; l < v_sum.size(); ++l) v_sum[l] += kv_recon_v[i][l];
      ++counted;
    }
    for (double& x : k_sum) x /= counted;
    for (double& x : v_sum) x /= counted;
    nlohmann::json mean = kv_errors_json(k_sum, v_sum);
    mean["steps"] = counted;
    s["kv_reconstruction_error_mean_last_10pct"] = mean;
  }
  // The largest over the steps this process trained (a resumed run: since resuming).
  if (kv_owner_receiver_max >= 0) s["kv_owner_receiver_error_max"] = kv_owner_receiver_max;
  s["record_wall_seconds"] = record_wall_seconds;
  s["replay_wall_seconds"] = replay_wall_seconds;
  s["harness_overhead_fraction"] =
      step_wall_seconds > 0 ? (record_wall_seconds + replay_wall_seconds) / step_wall_seconds : 0.0;
  return s;
}

}  // namespace lowband::train
