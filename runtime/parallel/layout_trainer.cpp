#include "runtime/parallel/layout_trainer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <istream>
#include <ostream>
#include <string>
#include <utility>

#include "common/error.h"
#include "runtime/compress/dry_codec.h"
#include "runtime/compress/make_codec.h"
#include "runtime/parallel/context/kv_agreement.h"
#include "runtime/parallel/context/rank.h"
#include "runtime/parallel/context/costs.h"
#include "runtime/parallel/data/replicas.h"
#include "runtime/parallel/pipeline/costs.h"
#include "runtime/parallel/pipeline/rank.h"
#include "runtime/parallel/rank_state.h"
#include "runtime/scenario/layout_check.h"
#include "runtime/sync/sync_period.h"

namespace lowband::parallel {
namespace {

// The key a wrong process count names (mpirun -np): the layout's outermost dimension.
const char* world_key(const ParallelConfig& p) {
  switch (layout_kind(p)) {
    case LayoutKind::data: return "parallel.data";
    case LayoutKind::pipeline: return "parallel.pipeline";
    case LayoutKind::context: break;
  }
  return "parallel.context";
}

}  // namespace

LayoutTrainer::LayoutTrainer(const Scenario& s, ComputeTiming timing, comm::Communicator* comm)
    : LayoutTrainer(s, timing, training_backend(s.training),
                    RankWorld(Layout(s.parallel).ranks(), comm, world_key(s.parallel))) {}

LayoutTrainer::LayoutTrainer(const Scenario& s, Dry)
    : LayoutTrainer(s, ComputeTiming::profile, kernels::backend(kernels::Device::dry),
                    RankWorld(Layout(s.parallel).ranks(), RankWorld::Dry{})) {}

LayoutTrainer::LayoutTrainer(const Scenario& s, ComputeTiming timing, const kernels::Backend& k, RankWorld world)
    : scenario_(s), timing_(timing), k_(&k), layout_(s.parallel), R_(0), shapes_(replica_shapes(s.parallel)),
      first_rank_(replica_first_ranks(shapes_)), world_(std::move(world)) {
  R_ = int(shapes_.size());
  model::check_model_config(s.model);
  check_layout();
  if (partial()) node_replicas();  // InputError where replicas share a node
  optim::lr_schedule_from(s.training).validate();
  // A dry run's: one real codec per replica answers its ranks' sizes.
  std::vector<std::shared_ptr<compress::KvCodec>> dry_codecs(static_cast<size_t>(R_));
  for (int r : world_.local_ranks()) {
    const int q = layout_.place(r).replica, i = index_in_replica(r);
    // One replica: the scenario as given (its placement, stages and codecs).
    const Scenario one = R_ == 1 ? scenario_ : replica_scenario(q);
    const RankPlace& at = layout_.place(r);
    if (one.parallel.pipeline > 1)
      ranks_.push_back(std::make_unique<PipelineRank>(one, at.stage, at.context_rank, *k_, timing, world_.log(r)));
    else
      ranks_.push_back(std::make_unique<ContextRank>(
          one, i, dry() ? compress::make_dry_kv_codec(one, dry_codecs[size_t(q)]) : compress::make_kv_codec(one), *k_,
          timing, world_.log(r)));
  }
  if (local_steps())
    outer_ = std::make_unique<OuterStep>(scenario_, layout_, *k_, timing_, world_.local_ranks(),
                                         [this](int r) -> RankProgram& { return rank(r); });
  // Boundaries that centre on the embedding start from its initial snapshot:
  // set-up traffic, in no step's graph (the snapshots after outer steps are).
  if (scenario_.compression.boundary.method == BoundaryMethod::embedding_residual)
    run_ranks([&](int r, comm::Communicator&, comm::Communicator& replica) { rank(r).snapshot_embedding(replica); },
              /*record=*/false);
  codecs_ = compressed_traffic().codec;
}

LayoutTrainer::~LayoutTrainer() = default;

void LayoutTrainer::check_layout() const {
  const ParallelConfig& p = scenario_.parallel;
  if (R_ > 1) {
    check_replicas(scenario_);
    if (scenario_.network.nodes < p.ranks() && p.placement.empty())
      throw InputError("network.nodes",
                       std::to_string(scenario_.network.nodes) + " nodes for " + std::to_string(p.ranks()) + " ranks");
  } else if (p.pipeline == 1) {
    check_context_parallel(scenario_);  // the split, the nodes and the batch (InputError)
  } else {
    PipelineCosts{scenario_};           // the pipeline's keys
    lowband::check_layout(scenario_);  // tied embeddings, weight syncs that stages of context ranks do not run
    const int P = p.pipeline, C = p.context;
    if (scenario_.network.nodes < P * C)
      throw InputError("network.nodes", std::to_string(scenario_.network.nodes) + " nodes for " + std::to_string(P) +
                                            " pipeline stages" +
                                            (C > 1 ? " x " + std::to_string(C) + " context ranks" : ""));
  }
}

bool LayoutTrainer::local_steps() const {
  return R_ > 1 && scenario_.parallel.data_sync.method != DataSyncMethod::all_reduce;
}

bool LayoutTrainer::syncs_weights(int step) const { return sync::syncs_at(scenario_, step); }

void LayoutTrainer::run_ranks(const std::function<void(int, comm::Communicator&, comm::Communicator&)>& fn,
                              bool record) {
  world_.run([&](int r, comm::Communicator& world) {
    if (R_ == 1) return fn(r, world, world);
    const std::unique_ptr<comm::Communicator> replica = world.split_known(colors([&](int w) { return layout_.place(w).replica; }));
    fn(r, world, *replica);
  }, record);
}

void LayoutTrainer::on_ranks(const std::function<void(int, RankProgram&, comm::Communicator&)>& fn) {
  run_ranks([&](int r, comm::Communicator&, comm::Communicator& replica) { fn(r, rank(r), replica); }, false);
}

const std::vector<ModelPart>& LayoutTrainer::parts() const {
  static const std::vector<ModelPart> none;
  return outer_ ? outer_->parts() : none;
}

Scenario LayoutTrainer::replica_scenario(int replica) const { return parallel::replica_scenario(scenario_, replica); }

CompressedTraffic LayoutTrainer::compressed_traffic() const {
  if (R_ == 1) return compressed_traffic_of(scenario_);
  CompressedTraffic t = compressed_traffic_of(replica_scenario(0));
  // Each codec once, with the replicas that use it where they differ.
  std::vector<std::pair<std::string, std::string>> codecs = {{t.codec, "0"}};
  for (int q = 1; q < R_; ++q) {
    const CompressedTraffic u = compressed_traffic_of(replica_scenario(q));
    t.uncompressed_bytes_per_step += u.uncompressed_bytes_per_step;
    if (u.name != t.name) t.name = "exchange";
    for (const std::string& kind : u.kinds)
      if (std::find(t.kinds.begin(), t.kinds.end(), kind) == t.kinds.end()) t.kinds.push_back(kind);
    const auto same = std::find_if(codecs.begin(), codecs.end(), [&](const auto& c) { return c.first == u.codec; });
    if (same == codecs.end()) codecs.push_back({u.codec, std::to_string(q)});
    else same->second += ", " + std::to_string(q);
  }
  if (codecs.size() > 1) {
    t.codec.clear();
    for (const auto& [codec, replicas] : codecs)
      t.codec += (t.codec.empty() ? "" : "; ") + std::string(replicas.find(',') == std::string::npos ? "replica " : "replicas ") +
                 replicas + ": " + codec;
  }
  return t;
}

StepRecord LayoutTrainer::train_step(int step, const int32_t* inputs, const int32_t* targets, int sequences,
                                     bool record) {
  if (sequences % R_ != 0)
    throw InputError("training.batch_size", std::to_string(sequences) + " sequences do not split over " +
                                                std::to_string(R_) + " replicas");
  const int per_replica = sequences / R_;
  const int64_t T = scenario_.model.seq_len;
  std::vector<int64_t> valid(static_cast<size_t>(R_), 0);  // per replica
  int64_t valid_all = 0;
  for (int q = 0; q < R_; ++q) {
    for (int64_t i = int64_t(q) * per_replica * T; i < int64_t(q + 1) * per_replica * T; ++i)
      valid[size_t(q)] += targets[i] >= 0;
    valid_all += valid[size_t(q)];
  }
  const bool synchronous = R_ > 1 && !local_steps();  // replicas summing their gradients every step
  if (partial() && step % scenario_.parallel.data_sync.inner_steps == 0) {  // a round begins
    round_start_.clear();
    for (int r : world_.local_ranks()) round_start_.push_back(rank_snapshot(rank(r)));
  }
  const bool outer = local_steps() && outer_->acts_at(step) && !closes_round(step);
  const bool merge = outer && outer_->merges_at(step);
  const bool merge_embedding = merge && outer_->merges_at(step, 0);  // the embedding lies in fragment 0
  std::vector<RankStepResult> results(static_cast<size_t>(ranks()));
  std::atomic<bool> launched{false};  // an exchange staged after the step before, launched as this one begins
  run_ranks([&](int r, comm::Communicator& world, comm::Communicator& replica) {
    if (local_steps() && outer_->launch_staged(r, step, world, world_.log(r))) launched = true;
    const int q = layout_.place(r).replica;
    // Synchronous: the ranks holding the same part in every replica (one shape).
    const std::unique_ptr<comm::Communicator> data_group =
        synchronous ? world.split_known(colors([&](int w) { return index_in_replica(w); })) : nullptr;
    const SynchronousReplicas data{data_group.get(), valid_all};
    const int64_t first = int64_t(q) * per_replica * T;
    results[size_t(r)] = rank(r).train_step(replica, step, inputs + first, targets + first, per_replica,
                                            synchronous ? &data : nullptr);
    if (outer) outer_->run(r, step, world, world_.log(r));
    if (merge_embedding) rank(r).snapshot_embedding(replica);  // the synchronised embedding, where the boundaries centre on it
  }, /*record=*/true);
  // A window stays open from the launch of a background exchange to its merge.
  exchange_in_window_ = record && ((exchange_in_window_ && world_.window_open()) || launched) && !merge;
  double kernel = 0;
  for (auto& p : ranks_) kernel += p->take_kernel_wall_seconds();
  if (outer_) kernel += outer_->take_wall_seconds();
  // Every rank has the lr; the norm and K/V errors are the first local rank's, and
  // with one replica its loss and weight sync too (every rank of a replica has them).
  StepRecord rec = close_step_record(world_, scenario_, step, results[size_t(world_.local_ranks()[0])], kernel, record,
                                     exchange_in_window_);
  const bool whole_context_group =
      !dry() && R_ == 1 && scenario_.parallel.pipeline == 1 && int(ranks_.size()) == ranks();
  if (whole_context_group && !rec.kv_reconstruction_error_k.empty()) {  // compressing
    const auto start = std::chrono::steady_clock::now();
    std::vector<const ContextAttention*> group;
    for (const auto& p : ranks_) group.push_back(p->context());
    owner_receiver_errors(group, scenario_.model.layers, int64_t(scenario_.model.kv_heads) * scenario_.model.head_dim(),
                          *k_, rec.kv_owner_receiver_error_k, rec.kv_owner_receiver_error_v);
    // Bookkeeping the step graph does not hold, as the logs' gathering.
    rec.record_wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (R_ == 1) return rec;
  // Synchronous: each replica's loss is its share of the batch mean, their sum
  // the mean; local steps: each replica's own mean, weighted by its targets.
  // Under MPI each process holds one rank: the sum goes over the processes.
  double loss = 0;
  for (int r : world_.local_ranks()) {
    const int q = layout_.place(r).replica;
    if (index_in_replica(r) != 0) continue;
    loss += local_steps() ? results[size_t(r)].loss * double(valid[size_t(q)]) / double(std::max<int64_t>(valid_all, 1))
                          : results[size_t(r)].loss;
  }
  const auto t0 = std::chrono::steady_clock::now();
  rec.loss = world_.sum_over_processes(loss);
  rec.record_wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rec.weight_sync = syncs_weights(step);
  return rec;
}

bool LayoutTrainer::closes_round(int step) const {
  return partial() && sync::issues_at(scenario_.parallel.data_sync, step);
}

Trainer::ClosedRound LayoutTrainer::close_round(int step, const std::vector<bool>& made_it) {
  if (!closes_round(step) || int(made_it.size()) != R_ || round_start_.size() != world_.local_ranks().size())
    throw std::logic_error("LayoutTrainer::close_round: step " + std::to_string(step) + " closes no round begun here");
  const bool merge_embedding = outer_->merges_at(step, 0);
  run_ranks([&](int r, comm::Communicator& world, comm::Communicator& replica) {
    if (!made_it[size_t(layout_.place(r).replica)])
      restore_rank(round_start_[size_t(world_.local_index(r))], rank(r), *k_);
    outer_->run(r, step, world, world_.log(r), made_it);
    if (merge_embedding) rank(r).snapshot_embedding(replica);
  }, /*record=*/true);
  round_start_.clear();  // closed: the next round begins with its own
  RankWorld::StepBooks books = world_.close_step(scenario_, outer_->take_wall_seconds(), /*record=*/true);
  return {std::move(books.graph), books.kernel_wall_seconds, books.record_wall_seconds};
}

std::vector<int> LayoutTrainer::node_replicas() const {
  std::vector<int> out(size_t(scenario_.network.nodes), -1);
  for (int w = 0; w < layout_.ranks(); ++w) {
    int& q = out.at(size_t(layout_.node_of(w)));
    if (q >= 0 && q != layout_.place(w).replica)
      throw InputError("parallel.placement", "node " + std::to_string(layout_.node_of(w)) + " runs ranks of replicas " +
                                                 std::to_string(q) + " and " + std::to_string(layout_.place(w).replica) +
                                                 ": partial participation times each replica on nodes of its own");
    q = layout_.place(w).replica;
  }
  return out;
}

float LayoutTrainer::evaluate(const int32_t* inputs, const int32_t* targets, int sequences) {
  std::vector<float> loss(static_cast<size_t>(ranks()));
  run_ranks([&](int r, comm::Communicator&, comm::Communicator& replica) {
    loss[size_t(r)] = rank(r).evaluate(replica, inputs, targets, sequences);
  }, /*record=*/false);
  if (R_ == 1) return loss[size_t(world_.local_ranks()[0])];  // every rank has the replica's loss
  eval_per_replica_.assign(size_t(R_), 0.0);
  for (int r : world_.local_ranks())
    if (index_in_replica(r) == 0) eval_per_replica_[size_t(layout_.place(r).replica)] = loss[size_t(r)];
  double sum = 0;
  for (double& replica_loss : eval_per_replica_) sum += replica_loss = world_.sum_over_processes(replica_loss);
  return float(sum / R_);
}

int64_t LayoutTrainer::last_eval_correct() const {
  return ranks_.empty() ? -1 : ranks_.front()->last_eval_correct();  // every rank of a replica has the sum
}

void LayoutTrainer::save_state(std::ostream& out) const {
  save_rank_states(out, world_, codecs_,
                   [&](int r) -> const RankProgram& { return *ranks_[size_t(world_.local_index(r))]; },
                   [&](int r, std::ostream& one) {
                     if (outer_) outer_->save_state(r, one);
                   });
}

void LayoutTrainer::load_state(std::istream& in) {
  load_rank_states(in, world_, codecs_, *k_, scenario_,
                   [&](int r) -> RankProgram& { return rank(r); },
                   [&](int r, std::istream& one) {
                     if (outer_) outer_->load_state(r, one);
                   });
}

}  // namespace lowband::parallel
