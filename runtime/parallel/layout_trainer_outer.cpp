// The outer steps of LayoutTrainer (diloco, sparseloco): the parts every rank
// synchronises, and what subspace-compressed boundaries need around them.
//
// A replica that compresses its pipeline boundaries with the subspace method
// keeps wo and w_down of its layers before its last stage, and its learnable
// embedding E, in span(U), and adds the frozen E_fixed to E; a replica that
// does not compress has neither. So that all replicas train one function family:
//  - every replica starts from the same constrained model: the union of the
//    compressing replicas' constrained tensors projected once (the same kernel
//    calls on the same bytes, so the copies agree bit for bit), and E_fixed
//    folded into the non-compressing replicas' learnable embedding;
//  - the outer sync works on the effective embedding E + E_fixed (a compressing
//    first stage adds E_fixed on the host before, and takes it off after);
//  - after the outer step a compressing replica projects its constrained
//    tensors back into span(U) (the average of unconstrained replicas leaves it;
//    without this its boundaries would no longer rebuild exactly) and restarts
//    its pseudo-gradient from the projected weights (OuterSync::rebase), so its
//    next Δ is its inner steps' alone, inside span(U).
#include <algorithm>
#include <chrono>

#include "runtime/compress/boundary_codec.h"
#include "runtime/compress/subspace_constraint.h"
#include "runtime/cost_model.h"
#include "runtime/parallel/data/replicas.h"
#include "runtime/parallel/layout_trainer.h"

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
const float* at(const std::vector<float>& host, int64_t offset) { return host.empty() ? nullptr : host.data() + offset; }

}  // namespace

void LayoutTrainer::start_constrained() {
  int union_end = 0;
  int compressing = -1;  // a replica that compresses (they share U and E_fixed: one seed, one rank)
  std::vector<int> own_end(static_cast<size_t>(R_));
  std::vector<Scenario> ones;
  for (int q = 0; q < R_; ++q) {
    ones.push_back(replica_scenario(q));
    own_end[size_t(q)] = constrained_end(ones.back());
    union_end = std::max(union_end, own_end[size_t(q)]);
    if (subspace(ones.back())) compressing = q;
  }
  constrained_.resize(ranks_.size());
  if (compressing < 0) return;
  const ModelConfig& c = scenario_.model;
  const Scenario& one = ones[size_t(compressing)];
  const uint64_t seed = compress::boundary_seed(one);
  compress::SubspaceConstraint basis(*k_, c.d_model, one.compression.boundary.rank, seed);
  const std::vector<float> fixed = compress::fixed_embedding(c.vocab, c.d_model, seed);
  for (int r : world_.local_ranks()) {
    const size_t li = size_t(world_.local_index(r));
    const int q = layout_.place(r).replica;
    model::Model& m = rank(r).model();
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

std::vector<float> LayoutTrainer::sync_view(int r) const {
  if (dry()) return {};  // no weights
  const size_t li = size_t(world_.local_index(r));
  const model::Model& m = ranks_[li]->model();
  std::vector<float> host = m.params_to_host();
  if (const Constrained* con = constrained_[li].get())
    for (size_t i = 0; i < con->fixed.size(); ++i) host[size_t(m.layout().embedding()) + i] += con->fixed[i];
  return host;
}

void LayoutTrainer::build_outer_syncs() {
  parts_ = replica_parts(scenario_);
  holdings_.resize(ranks_.size());
  for (int r : world_.local_ranks()) {
    const size_t li = size_t(world_.local_index(r));
    const model::ParamLayout& stage = ranks_[li]->model().layout();
    const std::vector<float> host = sync_view(r);
    for (int p = 0; p < int(parts_.size()); ++p) {
      const ModelPart& part = parts_[size_t(p)];
      if (!part.within(stage.first_layer(), stage.end_layer())) continue;
      const int64_t offset = part_offset(stage, part);
      holdings_[li].push_back({p, offset,
                               std::make_unique<sync::OuterSync>(scenario_.parallel.data_sync,
                                                                 model::ParamLayout(scenario_.model, part.span()),
                                                                 at(host, offset))});
    }
  }
}

void LayoutTrainer::outer_step_groups(int r, comm::Communicator& world) {
  // One group per (part, context rank): every rank splits once per part, in
  // part order, color -1 where it holds nothing of the part.
  std::vector<std::unique_ptr<comm::Communicator>> groups;
  for (int p = 0; p < int(parts_.size()); ++p) {
    const ModelPart& part = parts_[size_t(p)];
    groups.push_back(world.split_known(colors([&](int w) {
      const RankPlace& at = layout_.place(w);
      return holds_part(scenario_, at, part) ? p * shapes_[0].context + at.context_rank : -1;
    })));
  }
  std::vector<comm::Communicator*> part_groups;
  for (auto& g : groups) part_groups.push_back(g.get());
  outer_step(r, part_groups);
}

void LayoutTrainer::outer_step(int r, const std::vector<comm::Communicator*>& part_groups) {
  const size_t li = size_t(world_.local_index(r));
  model::Model& m = rank(r).model();
  std::vector<float> host = sync_view(r);
  // The compute before and after each part's collective, logged as the step
  // graph's "outer_sync" spans (parallel/data/step_graph.cpp logs the same costs dry).
  const auto span = [&](const cost::Cost& cost, double wall_seconds) {
    outer_wall_seconds_ += wall_seconds;
    world_.log(r).compute(timing_ == ComputeTiming::measured
                              ? wall_seconds
                              : cost::node_seconds(scenario_, layout_.node_of(r), cost, "outer_sync"),
                          "outer_sync");
  };
  // Every part's message and collective first, all in flight together (a rank
  // of a one-node replica holds several parts: their all-gathers share its
  // links rather than wait for each other), then every part's update.
  const DataSyncConfig& config = scenario_.parallel.data_sync;
  auto t0 = std::chrono::steady_clock::now();
  const auto since_t0 = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  for (Holding& h : holdings_[li]) {
    t0 = std::chrono::steady_clock::now();
    h.sync->start(*part_groups[size_t(h.part)], at(host, h.offset),
                  [&] { span(sync::OuterSync::before_exchange_cost(config, h.sync->elements()), since_t0()); });
  }
  if (!holdings_[li].empty()) part_groups[size_t(holdings_[li].front().part)]->wait_deferred();
  world_.log(r).join_deferred();
  for (Holding& h : holdings_[li]) {
    t0 = std::chrono::steady_clock::now();
    h.sync->finish(at(host, h.offset));
    span(sync::OuterSync::after_exchange_cost(config, h.sync->elements()), since_t0());
  }
  if (dry()) return;  // no weights to put back
  Constrained* con = constrained_[li].get();
  if (con)
    for (size_t i = 0; i < con->fixed.size(); ++i) host[size_t(m.layout().embedding()) + i] -= con->fixed[i];
  k_->upload(m.params(), host.data(), host.size() * sizeof(float));
  if (!con) return;
  con->constraint.project(m, /*grads=*/false);
  host = sync_view(r);
  for (Holding& h : holdings_[li]) h.sync->rebase(host.data() + h.offset);
}

}  // namespace lowband::parallel
