#include "runtime/estimate/estimate.h"

namespace lowband {

namespace {

void add_sections(const Estimate& e, nlohmann::json& out) {
  if (e.data) {
    out["replicas"] = e.data->replicas;
    out["replica_shapes"] = e.data->replica_shapes;
    out["data_sync"] = e.data->data_sync;
  }
  if (e.context) {
    out["context_ranks"] = e.context->context_ranks;
    out["kv_codec"] = e.context->kv_codec;
    if (e.context->kv_ranks) out["kv_codec_ranks"] = compress::to_json(*e.context->kv_ranks);
    out["sequences_in_flight"] = e.context->sequences_in_flight;
    out["kv_bytes_ratio"] = e.context->kv_bytes_ratio;
    out["kv_bytes_saved_fraction"] = e.context->kv_bytes_saved_fraction;
  }
  if (e.pipeline) {
    const PipelineSection& p = *e.pipeline;
    nlohmann::json boundaries = nlohmann::json::array();
    for (const BoundaryTraffic& b : p.boundaries)
      boundaries.push_back({{"stages", {b.from_stage, b.from_stage + 1}},
                            {"forward_bytes_per_step", b.forward_bytes},
                            {"backward_bytes_per_step", b.backward_bytes}});
    out.update({{"stages", p.stages}, {"microbatches", p.microbatches}, {"schedule", p.schedule},
                {"bubble_fraction", p.bubble_fraction}, {"ideal_bubble_fraction", p.ideal_bubble_fraction},
                {"boundary_bytes", boundaries}, {"boundary_bytes_ratio", p.boundary_bytes_ratio},
                {"boundary_codec", p.boundary_codec}});
  }
  if (e.exposed_by_kind) {
    out["exposed_kv_seconds"] = e.exposed_by_kind->kv_seconds;
    out["exposed_boundary_seconds"] = e.exposed_by_kind->boundary_seconds;
    out["exposed_grad_sync_seconds"] = e.exposed_by_kind->grad_sync_seconds;
  }
}

void add_sync(const PeriodicSync& y, nlohmann::json& out) {
  out.update({{"periodic_sync", y.method}, {"inner_steps", y.inner_steps},
              {"inner_step_seconds", y.inner_step_seconds}, {"sync_step_seconds", y.sync_step_seconds},
              {"comm_per_sync_seconds", y.comm_per_sync_seconds}, {"bytes_per_rank_per_sync", y.bytes_per_rank_per_sync}});
  if (y.exchange.empty()) return;  // the sparse weight sync: no outer message
  out.update({{"delay_steps", y.delay_steps}, {"window_steps", y.window_steps}, {"fragments", y.fragments},
              {"outer_compute_seconds", y.outer_compute_seconds},
              {"message_bytes_per_replica", y.message_bytes_per_replica},
              {"part_message_bytes", y.part_message_bytes}, {"exchange", y.exchange}});
  if (y.relay_node < 0) return;
  out["relay_node"] = y.relay_node;
  out["relay_bytes_per_sync"] = y.relay_bytes_per_sync;
}

}  // namespace

nlohmann::json to_json(const BoundSection& b) {
  return {{"bound_seconds", b.bound_seconds},
          {"bound_kind", b.bound_kind},
          {"busiest_link", b.busiest_link},
          {"busiest_link_bytes", b.busiest_link_bytes},
          {"busiest_link_bandwidth_bytes_per_s", b.busiest_link_bandwidth_bytes_per_s},
          {"busiest_link_seconds", b.busiest_link_seconds},
          {"busiest_link_bytes_by_kind", b.busiest_link_bytes_by_kind},
          {"latency_bound_seconds", b.latency_bound_seconds},
          {"compute_bound_seconds", b.compute_bound_seconds},
          {"step_over_bound", b.step_over_bound},
          {"max_tokens_per_s", b.max_tokens_per_s}};
}

nlohmann::json to_json(const Estimate& e) {
  nlohmann::json out = {
      {"parallelism", e.parallelism},
      {"ranks", e.ranks},
      {"step_seconds", e.step_seconds},
      {"tokens_per_step", e.tokens_per_step},
      {"tokens_per_s", e.tokens_per_s},
      {"compute_seconds", e.compute_seconds},
      {"free_network_step_seconds", e.free_network_step_seconds},
      {"exposed_comm_seconds", e.exposed_comm_seconds},
      {"compute_utilisation", e.compute_utilisation},
      {"bytes_per_rank_per_step", e.bytes_per_rank_per_step},
      {"peak_bytes_per_rank_per_step", e.peak_bytes_per_rank_per_step},
      {"model_flops_per_step", e.model_flops_per_step},
      {"peak_flops_per_s", e.peak_flops_per_s},
      {"mfu", e.mfu},
      {"network_model", e.network_model},
      {"network", e.network},
      {"replay_wall_seconds", e.replay_wall_seconds},
  };
  out.update(to_json(e.bound));
  add_sections(e, out);
  if (e.sync) add_sync(*e.sync, out);
  if (e.changing_network) {
    const ChangingNetworkSection& c = *e.changing_network;
    out["changing_network"] = {{"steps", c.steps},
                               {"total_seconds", c.total_seconds},
                               {"nominal_total_seconds", c.nominal_total_seconds},
                               {"lost_seconds", c.lost_seconds},
                               {"mean_step_seconds", c.mean_step_seconds},
                               {"slowest_step_seconds", c.slowest_step_seconds},
                               {"tokens_per_s", c.tokens_per_s},
                               {"replay_wall_seconds", c.replay_wall_seconds}};
    if (c.restart_policy) out["changing_network"]["restarts"] = c.restarts;
  }
  return out;
}

}  // namespace lowband
