#include "runtime/parallel/data/outer_step.h"

#include <algorithm>
#include <chrono>
#include <istream>
#include <ostream>

#include "runtime/compress/boundary_codec.h"
#include "runtime/compress/subspace_constraint.h"
#include "runtime/cost_model.h"
#include "runtime/parallel/data/replicas.h"

namespace lowband::parallel {
namespace {

bool subspace(const Scenario& one) {
  return one.parallel.pipeline > 1 && one.compression.boundary.method == BoundaryMethod::subspace;
}

// Layers [0, end) whose wo and w_down a subspace replica constrains.
int constrained_end(const Scenario& one) {
  return subspace(one) ? one.parallel.stage_first_layer(one.parallel.pipeline - 1, one.model.layers) : 0;
}

// A part's parameters in the rank's host view; null in a dry run's empty one.
float* at(std::vector<float>& host, int64_t offset) { return host.empty() ? nullptr : host.data() + offset; }

}  // namespace

OuterStep::OuterStep(const Scenario& s, const Layout& layout, const kernels::Backend& k, ComputeTiming timing,
                     const std::vector<int>& local_ranks, const Programs& programs)
    : scenario_(s), layout_(layout), k_(&k), timing_(timing), local_ranks_(local_ranks), programs_(programs),
      parts_(replica_parts(s)), holdings_(local_ranks.size()), constrained_(local_ranks.size()) {
  if (!dry()) start_constrained();  // values only: a dry run has none
  for (int r : local_ranks_) {
    const size_t li = size_t(local_index(r));
    const model::ParamLayout& stage = programs_(r).model().layout();
    std::vector<float> host = sync_view(r);
    for (int p = 0; p < int(parts_.size()); ++p) {
      const ModelPart& part = parts_[size_t(p)];
      if (!part.within(stage.first_layer(), stage.end_layer())) continue;
      const int64_t offset = part_offset(stage, part);
      holdings_[li].push_back({p, part_fragment(s, part), offset,
                               std::make_unique<sync::OuterSync>(s.parallel.data_sync,
                                                                 model::ParamLayout(s.model, part.span()),
                                                                 at(host, offset))});
    }
  }
}

OuterStep::~OuterStep() = default;

int OuterStep::local_index(int rank) const {
  return int(std::find(local_ranks_.begin(), local_ranks_.end(), rank) - local_ranks_.begin());
}

void OuterStep::start_constrained() {
  const int R = int(replica_shapes(scenario_.parallel).size());
  int union_end = 0;
  int compressing = -1;  // a replica that compresses (they share U and E_fixed: one seed, one rank)
  std::vector<int> own_end(static_cast<size_t>(R));
  std::vector<Scenario> ones;
  for (int q = 0; q < R; ++q) {
    ones.push_back(replica_scenario(scenario_, q));
    own_end[size_t(q)] = constrained_end(ones.back());
    union_end = std::max(union_end, own_end[size_t(q)]);
    if (subspace(ones.back())) compressing = q;
  }
  if (compressing < 0) return;
  const ModelConfig& c = scenario_.model;
  const Scenario& one = ones[size_t(compressing)];
  const uint64_t seed = compress::boundary_seed(one);
  compress::SubspaceConstraint basis(*k_, c.d_model, one.compression.boundary.rank, seed);
  const std::vector<float> fixed = compress::fixed_embedding(c.vocab, c.d_model, seed);
  for (int r : local_ranks_) {
    const size_t li = size_t(local_index(r));
    const int q = layout_.place(r).replica;
    model::Model& m = programs_(r).model();
    const model::ParamLayout& L = m.layout();
    const bool holds_embedding = L.span().embedding;
    if (subspace(ones[size_t(q)]))
      constrained_[li] = std::make_unique<Constrained>(
          Constrained{BoundaryConstraint(ones[size_t(q)], *k_), holds_embedding ? fixed : std::vector<float>{}});
    // What the rank's own constraint did not project already.
    for (int l = std::max(L.first_layer(), own_end[size_t(q)]); l < std::min(L.end_layer(), union_end); ++l) {
      basis.project_columns(m.params() + L.layer(l).wo, c.d_model);
      basis.project_columns(m.params() + L.layer(l).w_down, c.ffn_hidden);
    }
    if (holds_embedding && !constrained_[li]) {  // E <- P·E + E_fixed: the compressing replicas' E + E_fixed
      basis.project_rows(m.params() + L.embedding(), c.vocab);
      std::vector<float> host = m.params_to_host();
      for (size_t i = 0; i < fixed.size(); ++i) host[size_t(L.embedding()) + i] += fixed[i];
      k_->upload(m.params(), host.data(), host.size() * sizeof(float));
    }
  }
}

std::vector<float> OuterStep::sync_view(int r) const {
  if (dry()) return {};  // no weights
  const model::Model& m = programs_(r).model();
  std::vector<float> host = m.params_to_host();
  if (const Constrained* con = constrained_[size_t(local_index(r))].get())
    for (size_t i = 0; i < con->fixed.size(); ++i) host[size_t(m.layout().embedding()) + i] += con->fixed[i];
  return host;
}

std::vector<std::unique_ptr<comm::Communicator>> OuterStep::part_groups(comm::Communicator& world,
                                                                        const std::vector<bool>& made_it) const {
  // Every rank splits once per part, in part order, color -1 where it holds
  // nothing of the part: a split every rank makes without exchanging colors.
  const int C = replica_shapes(scenario_.parallel).front().context;
  std::vector<std::unique_ptr<comm::Communicator>> groups;
  for (int p = 0; p < int(parts_.size()); ++p) {
    std::vector<int> colors;
    for (int w = 0; w < layout_.ranks(); ++w) {
      const RankPlace& at = layout_.place(w);
      const bool in = made_it.empty() || made_it[size_t(at.replica)];
      colors.push_back(in && holds_part(scenario_, at, parts_[size_t(p)]) ? p * C + at.context_rank : -1);
    }
    groups.push_back(world.split_known(colors));
  }
  return groups;
}

std::vector<std::unique_ptr<comm::Communicator>> OuterStep::result_groups(comm::Communicator& world,
                                                                          const std::vector<bool>& made_it,
                                                                          std::vector<int>& roots) const {
  const int C = replica_shapes(scenario_.parallel).front().context;
  std::vector<std::unique_ptr<comm::Communicator>> groups;
  roots.assign(parts_.size(), 0);
  for (int p = 0; p < int(parts_.size()); ++p) {
    std::vector<int> colors(size_t(layout_.ranks()), -1);
    std::vector<bool> sender(size_t(C), false);  // per context rank: the first participant found
    for (int w = 0; w < layout_.ranks(); ++w) {
      const RankPlace& at = layout_.place(w);
      if (!holds_part(scenario_, at, parts_[size_t(p)])) continue;
      const bool in = made_it[size_t(at.replica)];
      if (in && sender[size_t(at.context_rank)]) continue;  // a participant that sends nothing
      colors[size_t(w)] = p * C + at.context_rank;
      if (in) sender[size_t(at.context_rank)] = true;
    }
    // The sender's rank in its group (ranked in world order): the late holders before it.
    const int mine = colors[size_t(world.rank())];
    for (int w = 0; mine >= 0 && w < layout_.ranks(); ++w) {
      if (colors[size_t(w)] != mine) continue;
      if (made_it[size_t(layout_.place(w).replica)]) break;
      ++roots[size_t(p)];
    }
    groups.push_back(world.split_known(colors));
  }
  return groups;
}

bool OuterStep::acts_at(int step) const {
  return sync::issues_at(scenario_.parallel.data_sync, step) || merges_at(step);
}

bool OuterStep::merges_at(int step, int fragment) const {
  const DataSyncConfig& d = scenario_.parallel.data_sync;
  for (int f = 0; f < d.fragments; ++f) {
    if (fragment >= 0 && f != fragment) continue;
    if (sync::merges_at(d, f, step)) return true;
    if (!holdings_.empty() && !holdings_.front().empty() && first_round(*holdings_.front().front().sync, f, step))
      return true;
  }
  return false;
}

bool OuterStep::first_round(const sync::OuterSync& sync, int fragment, int step) const {
  const DataSyncConfig& d = scenario_.parallel.data_sync;
  return d.delay_steps == d.inner_steps && sync::issues_at(d, fragment, step) && !sync.in_flight();
}

void OuterStep::span(int r, comm::RankLog& log, const cost::Cost& cost, double wall_seconds) {
  wall_seconds_ += wall_seconds;
  log.compute(timing_ == ComputeTiming::measured ? wall_seconds
                                                 : cost::node_seconds(scenario_, layout_.node_of(r), cost, "outer_sync"),
              "outer_sync");
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void OuterStep::run(int r, int step, comm::Communicator& world, comm::RankLog& log, const std::vector<bool>& made_it) {
  const size_t li = size_t(local_index(r));
  const DataSyncConfig& config = scenario_.parallel.data_sync;
  const auto issues = [&](const Holding& h) { return sync::issues_at(config, h.fragment, step); };
  const int replicas = int(replica_shapes(scenario_.parallel).size());
  std::vector<float> host = sync_view(r);
  if (config.delay_steps == 0) {
    if (!sync::issues_at(config, step)) return;
    // Every issuing part's message and collective first, all in flight together
    // (a rank of a one-node replica holds several parts: their all-gathers share
    // its links rather than wait for each other), then every such part's update.
    // Every rank splits alike, whichever fragments it holds.
    // Partial participation: the replicas that made the round among themselves.
    const bool in = made_it.empty() || made_it[size_t(layout_.place(r).replica)];
    const std::vector<std::unique_ptr<comm::Communicator>> groups = part_groups(world, made_it);
    for (Holding& h : holdings_[li]) {
      if (!issues(h) || !in) continue;
      const auto t0 = std::chrono::steady_clock::now();
      h.sync->start(*groups[size_t(h.part)], at(host, h.offset), [&] {
        span(r, log, sync::OuterSync::before_exchange_cost(config, h.sync->elements()), seconds_since(t0));
      });
    }
    if (in && !holdings_[li].empty()) groups[size_t(holdings_[li].front().part)]->wait_deferred();
    log.join_deferred();
    if (!made_it.empty()) {  // then the first of them sends the late ones the result
      std::vector<int> roots;
      const std::vector<std::unique_ptr<comm::Communicator>> to_late = result_groups(world, made_it, roots);
      const int participants = int(std::count(made_it.begin(), made_it.end(), true));
      for (Holding& h : holdings_[li]) {
        comm::Communicator* group = to_late[size_t(h.part)].get();
        if (!group || group->size() == 1) continue;
        if (in) h.sync->send_result(*group, roots[size_t(h.part)]);
        else h.sync->receive_result(*group, roots[size_t(h.part)], participants);
      }
    }
  } else {  // the Δ of the weights the round ended with, before any merge changes them
    for (Holding& h : holdings_[li]) {
      if (!issues(h)) continue;
      const auto t0 = std::chrono::steady_clock::now();
      h.sync->stage(at(host, h.offset));
      h.stage_wall_seconds = seconds_since(t0);
    }
  }
  if (!merges_at(step)) return;
  if (config.delay_steps > 0) log.join_background();
  bool merged = false;
  for (Holding& h : holdings_[li]) {
    const bool first = first_round(*h.sync, h.fragment, step);
    // A dry run taken from a later step has no exchange in flight where the
    // schedule merges one: nothing to merge.
    if (!h.sync->in_flight() && !first) continue;
    const auto t0 = std::chrono::steady_clock::now();
    if (first) h.sync->finish_first_round(at(host, h.offset), replicas);
    else h.sync->finish(at(host, h.offset));
    span(r, log, sync::OuterSync::after_exchange_cost(config, h.sync->elements()), seconds_since(t0));
    merged = true;
  }
  if (merged) put_back(r, host);
}

bool OuterStep::launch_staged(int r, int step, comm::Communicator& world, comm::RankLog& log) {
  const DataSyncConfig& config = scenario_.parallel.data_sync;
  // Every rank splits alike: the step after an issue, whichever fragments it holds.
  if (config.delay_steps == 0 || step == 0 || !sync::issues_at(config, step - 1)) return false;
  const size_t li = size_t(local_index(r));
  const std::vector<std::unique_ptr<comm::Communicator>> groups = part_groups(world);
  bool launched = false;
  for (Holding& h : holdings_[li]) {
    if (!h.sync->staged()) continue;
    h.sync->launch(*groups[size_t(h.part)], sync::OuterSync::Launch::background, [&] {
      span(r, log, sync::OuterSync::before_exchange_cost(config, h.sync->elements()), h.stage_wall_seconds);
    });
    launched = true;
  }
  if (!holdings_[li].empty()) groups[size_t(holdings_[li].front().part)]->wait_deferred();
  return launched;
}

void OuterStep::put_back(int r, std::vector<float>& host) {
  if (dry()) return;  // no weights to put back
  const size_t li = size_t(local_index(r));
  model::Model& m = programs_(r).model();
  Constrained* con = constrained_[li].get();
  if (con)
    for (size_t i = 0; i < con->fixed.size(); ++i) host[size_t(m.layout().embedding()) + i] -= con->fixed[i];
  k_->upload(m.params(), host.data(), host.size() * sizeof(float));
  if (!con) return;
  con->constraint.project(m, /*grads=*/false);
  host = sync_view(r);
  for (Holding& h : holdings_[li]) h.sync->rebase(host.data() + h.offset);
}

double OuterStep::take_wall_seconds() { return std::exchange(wall_seconds_, 0.0); }

void OuterStep::save_state(int rank, std::ostream& out) const {
  for (const Holding& h : holdings_[size_t(local_index(rank))]) h.sync->save_state(out);
}

void OuterStep::load_state(int rank, std::istream& in) {
  for (Holding& h : holdings_[size_t(local_index(rank))]) h.sync->load_state(in);
}

}  // namespace lowband::parallel
