#pragma once
// The files of a run directory (runtime/train/run.h) and the running totals
// behind steps.jsonl, curve.csv and summary.json.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/estimate/estimate.h"
#include "runtime/parallel/trainer.h"
#include "runtime/train/replayer.h"
#include "sim/replay.h"

namespace lowband::train {

class RunFiles {
 public:
  // Creates the directory (and parents); InputError("--out") when it cannot.
  // writes false: a process that is not the run's writer (MPI ranks but 0):
  // nothing is created or written.
  explicit RunFiles(std::string dir, bool writes = true);
  bool writes() const { return writes_; }
  const std::string& dir() const { return dir_; }
  void write_scenario(const std::string& json) const;  // atomically
  void remove_steps() const;                           // steps.jsonl, when there is one
  void append_step(const nlohmann::json& line) const;  // one whole line, flushed
  void write_curve(const std::string& csv) const;      // atomically (a fresh or resumed run)
  void append_curve_row(const std::string& row) const;  // one whole line, flushed
  void write_summary(const nlohmann::json& summary) const;  // atomically

 private:
  void append(const char* file, const std::string& lines) const;
  std::string dir_;
  bool writes_ = true;
};

// A trained step waiting for its replay.
struct PendingStep {
  parallel::StepRecord record;
  std::optional<double> val_loss;
  std::vector<double> val_loss_per_replica;  // data-parallel runs: each replica's
  // Keyed recall (training.data_source "recall"): val_answer_{remote,local}_{loss,accuracy,targets}.
  nlohmann::json val_answers = nlohmann::json::object();
  double wall_seconds = 0;  // train_step, including recording the graph
  // Partial participation (parallel.data_sync.deadline_seconds, quorum): the
  // step closes a round; which replicas made it (per replica, else empty), and
  // how long those that did waited for the close after the last of them was
  // ready (the step's replay does not hold it: added to its time).
  std::vector<bool> round_made_it;
  double round_wait_seconds = 0;
};

struct RunTotals {
  nlohmann::json header;              // scenario, network, codec, data, ... for summary.json
  int steps_planned = 0;
  int steps_done = 0;
  double tokens_per_step = 0;
  parallel::CompressedTraffic traffic;  // what the codec compresses (not checkpointed: from the trainer)
  // The data sync's relay node (parallel.data_sync.exchange relay; -1: none). It
  // runs no rank: its bytes are reported apart (bytes_sent_relay), not as a
  // rank's. Not checkpointed: from the scenario.
  int relay_node = -1;
  double uncompressed_kv_bytes_per_step = 0;  // all ranks' traffic.kinds, uncompressed
  double sim_total_seconds = 0;      // the run's simulated clock at the last step's end
  // network.dynamics: the steps' time beyond the nominal network's (ReplayedStep).
  // changing_network: whether to report it (not checkpointed: from the scenario).
  double sim_lost_seconds = 0;
  bool changing_network = false;
  // network.restart: times the run gave up on a stalled step and went back to its
  // last checkpoint. restarting: whether to report them (from the scenario).
  int sim_restarts = 0;
  bool restarting = false;
  // Partial participation: rounds closed, and replicas dropped from them, summed.
  int rounds_closed = 0, replicas_dropped = 0;
  // The most the busiest rank sent in one step (all kinds): beside the mean per
  // step, the peak a periodic sync puts on its step.
  double peak_bytes_per_rank = 0;
  double step_wall_seconds = 0;       // sum of train_step wall times
  double record_wall_seconds = 0;     // of which building the graphs
  double replay_wall_seconds = 0;     // SimGrid replays
  double kv_bytes_sent = 0;           // all ranks' traffic.kinds, as recorded
  std::map<std::string, double> bytes_per_rank_sum;  // by kind and "total", max over ranks per step
  std::map<std::string, double> bytes_all_ranks_sum;  // by kind and "total", sum over ranks per step
  double last_train_loss = 0;
  std::optional<double> last_val_loss;
  // The last evaluation's val_answers (not checkpointed: the last step always evaluates).
  nlohmann::json last_val_answers = nlohmann::json::object();
  bool diverged = false;
  std::string message;
  // Per step added: K and V reconstruction errors per layer (both empty for steps
  // the codec did not compress), for summary.json's last and late-mean values.
  std::vector<std::vector<double>> kv_recon_k, kv_recon_v;
  double kv_owner_receiver_max = -1;  // over steps.jsonl's kv_owner_receiver_error; -1: none
  // The physical bound of the last step (runtime/estimate/estimate.h), from its
  // graph on this target's network (`links`): summary.json's bound_last_step. Not
  // checkpointed (from the scenario and the next step). A projected target has
  // none here: its time_projection holds the projected scenario's.
  std::shared_ptr<const sim::NetworkLinks> links;
  std::optional<BoundSection> last_bound;
  std::string curve_csv = "step,sim_seconds,sim_hours,wall_seconds,train_loss,val_loss,lr,bytes_sent_per_rank\n";

  // Takes one replayed step into the totals, appends its steps.jsonl line and
  // its curve.csv row.
  void add(const PendingStep& step, const ReplayedStep& replayed, const RunFiles& files);
  nlohmann::json summary_json() const;
};

}  // namespace lowband::train
