// to_json: the resolved scenario, every knob explicit, quantities as exact unit
// strings, so that parse_scenario(to_json(s)) == s. Written into run directories.
#include <algorithm>
#include <cmath>

#include "runtime/scenario/load.h"
#include "runtime/scenario/units.h"

namespace lowband {
namespace {

using nlohmann::json;

// x / scale, nudged by an ulp where needed so that the parser's (x / scale) * scale
// gives back x exactly.
double exact_quotient(double x, double scale) {
  const double v = x / scale;
  for (double c : {v, std::nextafter(v, -INFINITY), std::nextafter(v, INFINITY)})
    if (c * scale == x) return c;
  return v;
}

json link_json(const sim::Link& l) {
  json j = {{"bandwidth", units::exact_bandwidth(l.bandwidth_bytes_per_s)},
            {"latency", units::exact_duration(l.latency_s)}};
  if (l.upload_bytes_per_s > 0) j["upload_bandwidth"] = units::exact_bandwidth(l.upload_bytes_per_s);  // access links
  return j;
}

json pair_json(const sim::PairLink& p) {
  json j = link_json(p.link);
  j["between"] = {p.a, p.b};
  return j;
}

json node_links_json(const std::vector<sim::NodeLink>& links) {
  json out = json::array();
  for (const auto& n : links) {
    json j = link_json(n.link);
    j["node"] = n.node;
    out.push_back(j);
  }
  return out;
}

json pairs_json(const std::vector<sim::PairLink>& links) {
  json out = json::array();
  for (const auto& p : links) out.push_back(pair_json(p));
  return out;
}

json network_json(const sim::NetworkSpec& n) {
  json j = {{"model", n.model == sim::NetworkModel::ideal ? "ideal" : "tcp"}, {"nodes", n.nodes}};
  switch (n.topology) {
    case sim::Topology::star:
    case sim::Topology::full_mesh:
      j.update(link_json(n.link));
      j["topology"] = n.topology == sim::Topology::star ? "star" : "full_mesh";
      j["overrides"] = n.topology == sim::Topology::star ? node_links_json(n.node_links) : pairs_json(n.pair_links);
      break;
    case sim::Topology::clusters: {
      j["topology"] = "clusters";
      json clusters = json::array();
      for (const auto& c : n.clusters) {
        json cj = link_json(c.access);
        cj["nodes"] = c.nodes;
        clusters.push_back(cj);
      }
      j["clusters"] = clusters;
      j["wan"] = link_json(n.wan);
      j["wan_overrides"] = pairs_json(n.wan_links);
      j["overrides"] = node_links_json(n.node_links);
      break;
    }
    case sim::Topology::explicit_links:
      j["topology"] = "explicit";
      j["links"] = pairs_json(n.pair_links);
      break;
  }
  if (n.model == sim::NetworkModel::tcp)
    j["tcp"] = {{"send_buffer", units::exact_bytes(n.tcp.send_buffer_bytes)},
                {"congestion_control", sim::to_string(n.tcp.congestion_control)},
                {"connections", sim::to_string(n.tcp.connections)}};
  if (!n.simgrid_config.empty()) {
    json sg = json::object();
    for (const auto& [key, value] : n.simgrid_config) sg[key] = value;
    j["simgrid"] = sg;
  }
  return j;
}

const char* dtype_name(sim::DType d) {
  switch (d) {
    case sim::DType::fp32: return "fp32";
    case sim::DType::tf32: return "tf32";
    case sim::DType::bf16: return "bf16";
    case sim::DType::fp16: return "fp16";
  }
  return "bf16";
}

json devices_json(const DeviceConfig& d) {
  json custom = json::array(), overrides = json::array();
  std::vector<std::string> listed;
  auto note = [&](const sim::DeviceProfile& p) {
    if (sim::find_builtin_device(p.name) || std::find(listed.begin(), listed.end(), p.name) != listed.end()) return;
    listed.push_back(p.name);
    constexpr double kTera = 1e12;
    custom.push_back({{"name", p.name},
                      {"peak_tflops_fp32", exact_quotient(p.peak_flops_fp32, kTera)},
                      {"peak_tflops_tf32", exact_quotient(p.peak_flops_tf32, kTera)},
                      {"peak_tflops_bf16", exact_quotient(p.peak_flops_bf16, kTera)},
                      {"memory_bandwidth", units::exact_bandwidth(p.memory_bandwidth_bytes_per_s, true)},
                      {"memory", units::exact_bytes(p.memory_bytes)},
                      {"efficiency", p.efficiency}});
  };
  note(d.default_profile);
  for (const auto& [node, profile] : d.node_profiles) {
    note(profile);
    overrides.push_back({{"node", node}, {"profile", profile.name}});
  }
  const char* timing = d.timing == DeviceTiming::measured  ? "measured"
                       : d.timing == DeviceTiming::profile ? "profile"
                                                           : "auto";
  return {{"profile", d.default_profile.name}, {"dtype", dtype_name(d.dtype)}, {"overrides", overrides},
          {"custom_profiles", custom}, {"timing", timing}};
}

json boundary_json(const BoundaryConfig& b) {
  const char* method = b.method == BoundaryMethod::subspace  ? "subspace"
                       : b.method == BoundaryMethod::lowrank  ? "lowrank"
                       : b.method == BoundaryMethod::topk     ? "topk"
                       : b.method == BoundaryMethod::quantize ? "quantize"
                                                              : "none";
  json j = {{"method", method}};
  if (b.method == BoundaryMethod::subspace || b.method == BoundaryMethod::lowrank) j["rank"] = b.rank;
  if (b.method == BoundaryMethod::topk) j["topk_fraction"] = b.topk_fraction;
  if (b.method == BoundaryMethod::quantize) {
    j["bits"] = b.quantize_bits;
    j["block"] = b.quantize_block;
  }
  return j;
}

json data_sync_json(const DataSyncConfig& d) {
  if (d.method == DataSyncMethod::all_reduce) return {{"method", "all_reduce"}};
  json j = {{"method", data_sync_method_name(d.method)},
            {"inner_steps", d.inner_steps},
            {"outer_lr", d.outer_lr}};
  if (d.method == DataSyncMethod::diloco) {
    j["outer_momentum"] = d.outer_momentum;
    return j;
  }
  j["topk_per_chunk"] = d.topk_per_chunk;
  j["chunk"] = d.chunk;
  j["value_bits"] = d.value_bits;
  j["error_decay"] = d.error_decay;
  j["average"] = d.average == SparseAverage::chosen ? "chosen" : "all";
  j["exchange"] = d.exchange == DataSyncExchange::relay ? "relay" : "all_gather";
  if (d.exchange == DataSyncExchange::relay) j["relay_node"] = d.relay_node;
  return j;
}

json compression_json(const CompressionConfig& c) {
  const char* method = c.method == CompressionMethod::mos        ? "mos"
                       : c.method == CompressionMethod::topk     ? "topk"
                       : c.method == CompressionMethod::quantize ? "quantize"
                                                                 : "none";
  json j = {{"method", method},
            {"warmup_steps", c.warmup_steps},
            {"weight_sync", weight_sync_name(c.weight_sync)},
            {"sync_fraction", c.sync_fraction},
            {"sync_every", c.sync_every}};
  if (c.weight_sync == WeightSync::topk_grad) j["sync_value_bits"] = c.sync_value_bits;
  if (c.method == CompressionMethod::mos) {
    if (c.k_rank_set > 0) j["k_rank"] = c.k_rank_set; else j["k_ratio"] = c.k_ratio;
    if (c.v_rank_set > 0) j["v_rank"] = c.v_rank_set; else j["v_ratio"] = c.v_ratio;
    j["rotation"] = c.rotation == MosRotation::fixed ? "fixed" : c.rotation == MosRotation::random ? "random" : "learned";
    j["warm_start"] = c.warm_start;
    j["k_frame"] = c.k_frame == KFrame::post_rope ? "post_rope" : "pre_rope";
  }
  if (c.method == CompressionMethod::topk) j["topk_fraction"] = c.topk_fraction;
  if (c.method == CompressionMethod::quantize) {
    j["bits"] = c.quantize_bits;
    j["block"] = c.quantize_block;
  }
  j["boundary"] = boundary_json(c.boundary);
  return j;
}

}  // namespace

nlohmann::json to_json(const Scenario& s) {
  const auto& m = s.model;
  const auto& p = s.parallel;
  const auto& t = s.training;
  nlohmann::json out = {
      {"name", s.name},
      {"description", s.description},
      {"model",
       {{"layers", m.layers}, {"d_model", m.d_model}, {"heads", m.heads}, {"kv_heads", m.kv_heads},
        {"ffn_hidden", m.ffn_hidden}, {"vocab", m.vocab}, {"seq_len", m.seq_len},
        {"bytes_per_element", m.bytes_per_element}, {"tie_embeddings", m.tie_embeddings}}},
      {"parallel",
       {{"context", p.context}, {"pipeline", p.pipeline}, {"data", p.data}, {"microbatches", p.microbatches},
        {"schedule", p.schedule == PipelineSchedule::gpipe ? "gpipe" : "1f1b"},
        {"split", p.split == CpSplit::zigzag ? "zigzag" : "contiguous"},
        {"exchange", p.exchange == CpExchange::ring ? "ring" : "all_gather"}, {"overlap", p.overlap},
        {"data_sync", data_sync_json(p.data_sync)}}},
      {"compression", compression_json(s.compression)},
      {"network", network_json(s.network)},
      {"devices", devices_json(s.devices)},
      {"training",
       {{"steps", t.steps}, {"batch_size", t.batch_size}, {"lr", t.lr}, {"lr_warmup_steps", t.lr_warmup_steps},
        {"weight_decay", t.weight_decay}, {"grad_clip", t.grad_clip}, {"seed", t.seed}, {"data", t.data},
        {"tokenizer", t.tokenizer}, {"eval_every", t.eval_every},
        {"validation_fraction", t.validation_fraction}, {"eval_batches", t.eval_batches},
        {"checkpoint_every", t.checkpoint_every}, {"backend", t.backend}}},
  };
  if (!p.replicas.empty()) {  // the replicas give the placement (parse refuses both)
    json replicas = json::array();
    for (const ReplicaConfig& r : p.replicas)
      replicas.push_back({{"pipeline", r.pipeline}, {"context", r.context}, {"nodes", r.nodes},
                          {"compress_boundaries", r.compress_boundaries}});
    out["parallel"]["replicas"] = replicas;
  } else if (!p.placement.empty()) {
    out["parallel"]["placement"] = p.placement;
  }
  if (!p.stage_layers.empty()) out["parallel"]["stage_layers"] = p.stage_layers;  // absent: the even split
  // Inline, so that a run directory's scenario.json says everything the run used.
  if (s.projection.scenario) out["projection"] = {{"scenario", to_json(*s.projection.scenario)}};
  return out;
}

}  // namespace lowband
