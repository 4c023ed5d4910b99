#include "runtime/train/checkpoint.h"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/atomic_file.h"
#include "common/binary_io.h"
#include "common/error.h"
#include "runtime/scenario/equal.h"
#include "runtime/scenario/load.h"
#include "runtime/train/run_dir.h"

namespace lowband::train {
namespace {

constexpr char kMagic[8] = {'L', 'B', 'C', 'K', 'P', 'T', '\r', '\n'};
constexpr size_t kHeaderBytes = 8 + 3 * 8;

void write_doubles_list(std::ostream& out, const std::vector<std::vector<double>>& lists) {
  binary::write_u64(out, lists.size());
  for (const auto& l : lists) binary::write_vector(out, l);
}

std::vector<std::vector<double>> read_doubles_list(std::istream& in, const char* what) {
  // One list at a time, as its bytes arrive: a damaged count allocates nothing past the file.
  const uint64_t n = binary::read_length(in, what);
  std::vector<std::vector<double>> lists;
  for (uint64_t i = 0; i < n; ++i) lists.push_back(binary::read_vector<double>(in, what));
  return lists;
}

int read_int(std::istream& in, const char* what) {
  const int64_t x = binary::read_i64(in, what);
  if (x < 0 || x > INT32_MAX) throw binary::BinaryFormatError(std::string("bad ") + what);
  return int(x);
}

}  // namespace

std::string checkpoint_path(const std::string& run_dir) { return run_dir + "/" + kCheckpointFile; }

std::string encode_totals(const RunTotals& t) {
  std::ostringstream out;
  binary::write_string(out, t.header.dump());
  binary::write_i64(out, t.steps_planned);
  binary::write_i64(out, t.steps_done);
  for (double x : {t.tokens_per_step, t.uncompressed_kv_bytes_per_step, t.sim_total_seconds, t.step_wall_seconds,
                   t.record_wall_seconds, t.replay_wall_seconds, t.kv_bytes_sent, t.last_train_loss})
    binary::write_f64(out, x);
  binary::write_u64(out, t.bytes_per_rank_sum.size());
  for (const auto& [kind, sum] : t.bytes_per_rank_sum) binary::write_string(out, kind), binary::write_f64(out, sum);
  binary::write_bool(out, t.last_val_loss.has_value());
  binary::write_f64(out, t.last_val_loss.value_or(0.0));
  binary::write_bool(out, t.diverged);
  binary::write_string(out, t.message);
  write_doubles_list(out, t.kv_recon_k);
  write_doubles_list(out, t.kv_recon_v);
  binary::write_string(out, t.curve_csv);
  // Last, so that totals written before it existed still read (as no sums).
  binary::write_u64(out, t.bytes_all_ranks_sum.size());
  for (const auto& [kind, sum] : t.bytes_all_ranks_sum) binary::write_string(out, kind), binary::write_f64(out, sum);
  binary::write_f64(out, t.sim_lost_seconds);  // after it too, for the same reason
  binary::write_i64(out, t.sim_restarts);  // and after that
  binary::write_i64(out, t.rounds_closed);  // and so on
  binary::write_i64(out, t.replicas_dropped);
  binary::write_f64(out, t.peak_bytes_per_rank);
  return out.str();
}

RunTotals decode_totals(const std::string& bytes) {
  std::istringstream in(bytes);
  RunTotals t;
  const std::string header = binary::read_string(in, "the summary header");
  t.header = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (t.header.is_discarded()) throw binary::BinaryFormatError("the summary header is not JSON");
  t.steps_planned = read_int(in, "planned steps");
  t.steps_done = read_int(in, "steps done");
  for (double* x : {&t.tokens_per_step, &t.uncompressed_kv_bytes_per_step, &t.sim_total_seconds,
                    &t.step_wall_seconds, &t.record_wall_seconds, &t.replay_wall_seconds, &t.kv_bytes_sent,
                    &t.last_train_loss})
    *x = binary::read_f64(in, "the run totals");
  const uint64_t kinds = binary::read_length(in, "the byte sums");
  for (uint64_t i = 0; i < kinds; ++i) {
    const std::string kind = binary::read_string(in, "a byte sum's kind");
    t.bytes_per_rank_sum[kind] = binary::read_f64(in, "a byte sum");
  }
  const bool has_val = binary::read_bool(in, "the validation flag");
  const double val = binary::read_f64(in, "the validation loss");
  if (has_val) t.last_val_loss = val;
  t.diverged = binary::read_bool(in, "the divergence flag");
  t.message = binary::read_string(in, "the message");
  t.kv_recon_k = read_doubles_list(in, "the K reconstruction errors");
  t.kv_recon_v = read_doubles_list(in, "the V reconstruction errors");
  t.curve_csv = binary::read_string(in, "curve.csv");
  if (in.peek() != std::char_traits<char>::eof()) {
    const uint64_t all_kinds = binary::read_length(in, "the all-ranks byte sums");
    for (uint64_t i = 0; i < all_kinds; ++i) {
      const std::string kind = binary::read_string(in, "a byte sum's kind");
      t.bytes_all_ranks_sum[kind] = binary::read_f64(in, "a byte sum");
    }
  }
  if (in.peek() != std::char_traits<char>::eof()) t.sim_lost_seconds = binary::read_f64(in, "the time lost");
  if (in.peek() != std::char_traits<char>::eof()) t.sim_restarts = read_int(in, "the restarts");
  if (in.peek() != std::char_traits<char>::eof()) {
    t.rounds_closed = read_int(in, "the rounds closed");
    t.replicas_dropped = read_int(in, "the replicas dropped");
  }
  if (in.peek() != std::char_traits<char>::eof()) t.peak_bytes_per_rank = binary::read_f64(in, "the peak bytes");
  if (in.peek() != std::char_traits<char>::eof()) throw binary::BinaryFormatError("bytes after the run totals");
  return t;
}

void write_checkpoint(const std::string& run_dir, const Checkpoint& c) {
  std::ostringstream payload;
  binary::write_string(payload, c.scenario_json);
  binary::write_i64(payload, c.steps_done);
  binary::write_bool(payload, c.complete);
  binary::write_string(payload, c.trainer_state);
  binary::write_u64(payload, c.targets.size());
  for (const TargetCheckpoint& t : c.targets) {
    binary::write_string(payload, t.run_dir);
    binary::write_string(payload, t.scenario_json);
    binary::write_string(payload, encode_totals(t.totals));
    binary::write_u64(payload, t.steps_jsonl_bytes);
  }
  binary::write_i64(payload, c.omp_threads);
  const std::string body = payload.str();
  std::ostringstream file;
  file.write(kMagic, sizeof kMagic);
  binary::write_u64(file, kCheckpointVersion);
  binary::write_u64(file, body.size());
  binary::write_u64(file, binary::checksum64(body.data(), body.size()));
  file.write(body.data(), std::streamsize(body.size()));
  write_file_atomically(checkpoint_path(run_dir), file.str());
}

Checkpoint read_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "no checkpoint here (cannot open it)");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw InputError(path, "not a lowband checkpoint");
  if (bytes.size() < kHeaderBytes) throw InputError(path, "truncated checkpoint: it ends inside its header");
  uint64_t version, size, sum;
  std::memcpy(&version, bytes.data() + 8, 8);
  std::memcpy(&size, bytes.data() + 16, 8);
  std::memcpy(&sum, bytes.data() + 24, 8);
  if (version < 1 || version > kCheckpointVersion)
    throw InputError(path, "checkpoint format version " + std::to_string(version) + ", this lowband reads versions 1 to " +
                               std::to_string(kCheckpointVersion));
  const uint64_t have = bytes.size() - kHeaderBytes;
  if (have != size)
    throw InputError(path, (have < size ? "truncated checkpoint: " : "checkpoint with trailing bytes: ") +
                               std::to_string(have) + " payload bytes, its header says " + std::to_string(size));
  if (binary::checksum64(bytes.data() + kHeaderBytes, size) != sum)
    throw InputError(path, "damaged checkpoint: the checksum does not match its contents");
  try {
    std::istringstream payload(std::move(bytes));
    payload.seekg(std::streamoff(kHeaderBytes));
    Checkpoint c;
    c.scenario_json = binary::read_string(payload, "the scenario");
    c.steps_done = read_int(payload, "steps done");
    c.complete = binary::read_bool(payload, "the complete flag");
    c.trainer_state = binary::read_string(payload, "the trainer state");
    // One target at a time, as its bytes arrive: a damaged count must not allocate
    // far past the file (found by tests/fuzz/fuzz_checkpoint).
    const uint64_t targets = binary::read_length(payload, "the targets");
    for (uint64_t i = 0; i < targets; ++i) {
      TargetCheckpoint t;
      t.run_dir = binary::read_string(payload, "a target's directory");
      t.scenario_json = binary::read_string(payload, "a target's scenario");
      t.totals = decode_totals(binary::read_string(payload, "a target's totals"));
      t.steps_jsonl_bytes = binary::read_u64(payload, "a target's steps.jsonl length");
      c.targets.push_back(std::move(t));
    }
    if (version >= 2) c.omp_threads = read_int(payload, "the OpenMP thread count");
    if (payload.peek() != std::char_traits<char>::eof()) throw binary::BinaryFormatError("bytes after the targets");
    if (c.targets.empty()) throw binary::BinaryFormatError("no output target");
    return c;
  } catch (const binary::BinaryFormatError& e) {
    // The checksum matched, so the file is what was written: another build wrote it.
    throw InputError(path, std::string("unreadable checkpoint (written by another lowband build?): ") + e.what());
  }
}

uint64_t steps_file_bytes(const std::string& run_dir) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(run_dir + "/steps.jsonl", ec);
  return ec ? 0 : uint64_t(size);
}

namespace {

// The recorded JSON as the lowband that wrote it meant it (upgrade_recorded_scenario).
nlohmann::json recorded_document(const std::string& json, const std::string& source) {
  auto doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw InputError(source, "the recorded scenario is not JSON");
  upgrade_recorded_scenario(doc);
  return doc;
}

Scenario recorded_scenario(const std::string& json, const std::string& source) {
  return parse_scenario(recorded_document(json, source), source);
}

// Empty when equal; else the first differing key, or the whole text when both parse the same.
std::string difference(const std::string& recorded_json, const Scenario& given, const std::string& source) {
  if (recorded_document(recorded_json, source).dump() == to_json(given).dump()) return "";
  const std::string diff = scenario_difference(recorded_scenario(recorded_json, source), given);
  return diff.empty() ? "the resolved scenario JSON" : diff;
}

}  // namespace

std::optional<Checkpoint> checkpoint_to_resume(const std::string& run_dir, const Scenario& scenario) {
  namespace fs = std::filesystem;
  if (run_dir.empty()) throw InputError("--resume", "needs the run directory to continue");
  if (!fs::is_directory(run_dir)) throw InputError("--resume", "no run directory " + run_dir);
  const std::string path = checkpoint_path(run_dir);
  if (!fs::exists(path)) {
    // It stopped before its first checkpoint (or checkpoint_every is 0): nothing to
    // continue from, so it starts again from step 0 unless it had ended.
    check_restartable(run_dir, path);
    return std::nullopt;
  }
  if (!fs::is_regular_file(path)) throw InputError(path, "not a regular file");
  Checkpoint c = read_checkpoint(path);
  const std::string diff = difference(c.scenario_json, scenario, path);
  if (!diff.empty()) throw InputError(path, "was written for another scenario: " + diff);
  return c;
}

std::vector<RetimeTarget> retime_targets_to_resume(const Checkpoint& c, const std::vector<RetimeTarget>& given,
                                                   const std::string& run_dir) {
  const std::string path = checkpoint_path(run_dir);
  if (given.empty()) {
    std::vector<RetimeTarget> out;
    for (size_t i = 1; i < c.targets.size(); ++i)
      out.push_back({recorded_scenario(c.targets[i].scenario_json, c.targets[i].run_dir + "/scenario.json"),
                     c.targets[i].run_dir});
    return out;
  }
  if (given.size() + 1 != c.targets.size())
    throw InputError(path, "records " + std::to_string(c.targets.size() - 1) + " retime targets, " +
                               std::to_string(given.size()) + " given");
  for (size_t i = 0; i < given.size(); ++i) {
    const std::string diff = difference(c.targets[i + 1].scenario_json, given[i].scenario, path);
    if (!diff.empty())
      throw InputError(path, "retime target " + std::to_string(i) + " differs from the recorded one: " + diff);
  }
  return given;
}

ResumeThreads resume_threads(int recorded, int wanted, bool forced) {
  const auto threads = [](int n) { return std::to_string(n) + " OpenMP thread" + (n == 1 ? "" : "s"); };
  const std::string why = "oneDNN's sgemm and the CPU kernels' sums depend on the thread count";
  ResumeThreads r;
  r.threads = wanted;
  if (recorded <= 0) {
    r.warning = true;
    r.message = std::string(kCheckpointFile) + " does not record the OpenMP thread count the run was trained with "
                "(an older lowband wrote it): continuing with " + threads(wanted) +
                "; the continuation may not be bit-identical to the uninterrupted run unless that ran with " +
                threads(wanted) + " too (" + why + ")";
  } else if (recorded != wanted && forced) {
    r.warning = true;
    r.message = "continuing with " + threads(wanted) + " (--threads) although the run was trained with " +
                threads(recorded) + " (" + kCheckpointFile + "): the continuation may not be bit-identical to the "
                "uninterrupted run (" + why + ")";
  } else if (recorded != wanted) {
    r.threads = recorded;
    r.message = "continuing with " + threads(recorded) + ", the count the run was trained with (" + kCheckpointFile +
                "), not this process's " + std::to_string(wanted) +
                ", so that it equals the uninterrupted run bit for bit (--threads forces another count)";
  }
  return r;
}

void restore_trainer(parallel::Trainer& trainer, const Checkpoint& c, const std::string& run_dir) {
  std::istringstream in(c.trainer_state);
  try {
    trainer.load_state(in);
    if (in.peek() != std::char_traits<char>::eof()) throw binary::BinaryFormatError("bytes after the trainer state");
  } catch (const binary::BinaryFormatError& e) {
    throw InputError(checkpoint_path(run_dir), std::string("its trainer state does not fit this scenario: ") + e.what());
  }
}

RunResult completed_run_result(const Checkpoint& c, const std::string& run_dir) {
  const RunTotals& t = c.targets.front().totals;
  RunResult r;
  r.run_dir = run_dir;
  r.steps_done = t.steps_done;
  r.diverged = t.diverged;
  r.message = t.message;
  r.final_train_loss = t.last_train_loss;
  r.final_val_loss = t.last_val_loss;
  r.sim_total_seconds = t.sim_total_seconds;
  r.summary = t.summary_json();
  r.harness_overhead_fraction = r.summary.value("harness_overhead_fraction", 0.0);
  r.resumed_at_step = c.steps_done;
  r.already_complete = true;
  for (size_t i = 1; i < c.targets.size(); ++i)
    r.retimed.push_back({c.targets[i].run_dir, c.targets[i].totals.sim_total_seconds, c.targets[i].totals.summary_json()});
  return r;
}

void truncate_steps_files(const std::vector<std::string>& run_dirs, const Checkpoint& c) {
  namespace fs = std::filesystem;
  if (run_dirs.size() != c.targets.size())
    throw std::logic_error("truncate_steps_files: " + std::to_string(run_dirs.size()) + " directories for " +
                           std::to_string(c.targets.size()) + " targets");
  for (size_t i = 0; i < run_dirs.size(); ++i) {
    const std::string file = run_dirs[i] + "/steps.jsonl";
    const uint64_t want = c.targets[i].steps_jsonl_bytes, have = steps_file_bytes(run_dirs[i]);
    bool line_end = want == 0;
    if (!line_end && have >= want) {
      std::ifstream in(file, std::ios::binary);
      in.seekg(std::streamoff(want - 1));
      line_end = in.get() == '\n';
    }
    if (have < want || !line_end)
      throw InputError(file, "changed since the checkpoint: it had " + std::to_string(want) + " bytes ending a line, now " +
                                 std::to_string(have));
  }
  for (size_t i = 0; i < run_dirs.size(); ++i) {
    const std::string file = run_dirs[i] + "/steps.jsonl";
    std::error_code ec;
    if (c.targets[i].steps_jsonl_bytes == 0 && !fs::exists(file)) continue;
    fs::resize_file(file, c.targets[i].steps_jsonl_bytes, ec);
    if (ec) throw std::runtime_error("cannot truncate " + file + ": " + ec.message());
  }
}

}  // namespace lowband::train
