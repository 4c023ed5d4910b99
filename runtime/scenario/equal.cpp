#include "runtime/scenario/equal.h"

#include <sstream>
#include <vector>

namespace lowband {
namespace {

// Collects the first difference; later comparisons are skipped once one is found.
class Diff {
 public:
  template <typename T>
  void field(const std::string& path, const T& a, const T& b) {
    if (!first_.empty() || a == b) return;
    std::ostringstream os;
    os.precision(17);
    os << path << ": " << a << " vs " << b;
    first_ = os.str();
  }
  template <typename E>
  void enumeration(const std::string& path, E a, E b) {
    field(path, static_cast<int>(a), static_cast<int>(b));
  }
  // Named by the scenario's keys (bytes/s and seconds once resolved).
  void link(const std::string& path, const sim::Link& a, const sim::Link& b) {
    field(path + ".bandwidth", a.bandwidth_bytes_per_s, b.bandwidth_bytes_per_s);
    field(path + ".latency", a.latency_s, b.latency_s);
    field(path + ".upload_bandwidth", a.upload_bytes_per_s, b.upload_bytes_per_s);
  }
  void device(const std::string& path, const sim::DeviceProfile& a, const sim::DeviceProfile& b) {
    field(path + ".name", a.name, b.name);
    field(path + ".peak_flops_fp32", a.peak_flops_fp32, b.peak_flops_fp32);
    field(path + ".peak_flops_tf32", a.peak_flops_tf32, b.peak_flops_tf32);
    field(path + ".peak_flops_bf16", a.peak_flops_bf16, b.peak_flops_bf16);
    field(path + ".memory_bandwidth_bytes_per_s", a.memory_bandwidth_bytes_per_s, b.memory_bandwidth_bytes_per_s);
    field(path + ".memory_bytes", a.memory_bytes, b.memory_bytes);
    field(path + ".efficiency", a.efficiency, b.efficiency);
  }
  // Lists: the sizes, then each element with `each(path_i, a_i, b_i)`.
  template <typename T, typename Each>
  void list(const std::string& path, const std::vector<T>& a, const std::vector<T>& b, Each each) {
    field(path + ".size", a.size(), b.size());
    for (size_t i = 0; first_.empty() && i < a.size(); ++i) each(path + "." + std::to_string(i), a[i], b[i]);
  }
  // A difference found elsewhere (already phrased "path: a vs b").
  void difference(const std::string& text) {
    if (first_.empty()) first_ = text;
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

// Each stage's layers as trained: an explicit even split equals no stage_layers.
std::vector<int> layers_per_stage(const ParallelConfig& p, int layers) {
  if (!p.stage_layers.empty() || p.pipeline < 1) return p.stage_layers;
  return std::vector<int>(size_t(p.pipeline), layers / p.pipeline);
}

}  // namespace

std::string scenario_difference(const Scenario& a, const Scenario& b) {
  Diff d;
  d.field("name", a.name, b.name);
  d.field("description", a.description, b.description);

  const auto &ma = a.model, &mb = b.model;
  d.field("model.layers", ma.layers, mb.layers);
  d.field("model.d_model", ma.d_model, mb.d_model);
  d.field("model.heads", ma.heads, mb.heads);
  d.field("model.kv_heads", ma.kv_heads, mb.kv_heads);
  d.field("model.ffn_hidden", ma.ffn_hidden, mb.ffn_hidden);
  d.field("model.vocab", ma.vocab, mb.vocab);
  d.field("model.seq_len", ma.seq_len, mb.seq_len);
  d.field("model.bytes_per_element", ma.bytes_per_element, mb.bytes_per_element);
  d.field("model.tie_embeddings", ma.tie_embeddings, mb.tie_embeddings);

  const auto &pa = a.parallel, &pb = b.parallel;
  d.field("parallel.context", pa.context, pb.context);
  d.field("parallel.pipeline", pa.pipeline, pb.pipeline);
  d.list("parallel.stage_layers", layers_per_stage(pa, ma.layers), layers_per_stage(pb, mb.layers),
         [&](const std::string& p, int x, int y) { d.field(p, x, y); });
  d.field("parallel.microbatches", pa.microbatches, pb.microbatches);
  // The schedule changes only the order of the same ops, but until the pipeline
  // trainer shows it bit-identical, a schedule trains its own run.
  d.enumeration("parallel.schedule", pa.schedule, pb.schedule);
  d.field("parallel.data", pa.data, pb.data);
  d.enumeration("parallel.split", pa.split, pb.split);
  d.enumeration("parallel.exchange", pa.exchange, pb.exchange);
  d.field("parallel.overlap", pa.overlap, pb.overlap);
  const auto &sa = pa.data_sync, &sb = pb.data_sync;
  d.enumeration("parallel.data_sync.method", sa.method, sb.method);
  d.field("parallel.data_sync.inner_steps", sa.inner_steps, sb.inner_steps);
  d.field("parallel.data_sync.outer_lr", sa.outer_lr, sb.outer_lr);
  d.field("parallel.data_sync.outer_momentum", sa.outer_momentum, sb.outer_momentum);
  d.field("parallel.data_sync.topk_per_chunk", sa.topk_per_chunk, sb.topk_per_chunk);
  d.field("parallel.data_sync.chunk", sa.chunk, sb.chunk);
  d.field("parallel.data_sync.value_bits", sa.value_bits, sb.value_bits);
  d.field("parallel.data_sync.error_decay", sa.error_decay, sb.error_decay);
  d.enumeration("parallel.data_sync.exchange", sa.exchange, sb.exchange);
  d.field("parallel.data_sync.relay_node", sa.relay_node, sb.relay_node);
  d.enumeration("parallel.data_sync.average", sa.average, sb.average);
  if (pa.placement != pb.placement) d.difference("parallel.placement: the ranks' nodes differ");

  const auto &ca = a.compression, &cb = b.compression;
  d.enumeration("compression.method", ca.method, cb.method);
  d.field("compression.k_ratio", ca.k_ratio, cb.k_ratio);
  d.field("compression.v_ratio", ca.v_ratio, cb.v_ratio);
  d.field("compression.k_rank_set", ca.k_rank_set, cb.k_rank_set);
  d.field("compression.v_rank_set", ca.v_rank_set, cb.v_rank_set);
  d.field("compression.warmup_steps", ca.warmup_steps, cb.warmup_steps);
  d.enumeration("compression.weight_sync", ca.weight_sync, cb.weight_sync);
  d.field("compression.sync_fraction", ca.sync_fraction, cb.sync_fraction);
  d.field("compression.sync_every", ca.sync_every, cb.sync_every);
  d.field("compression.sync_value_bits", ca.sync_value_bits, cb.sync_value_bits);
  d.enumeration("compression.rotation", ca.rotation, cb.rotation);
  d.field("compression.warm_start", ca.warm_start, cb.warm_start);
  d.enumeration("compression.k_frame", ca.k_frame, cb.k_frame);
  d.field("compression.topk_fraction", ca.topk_fraction, cb.topk_fraction);
  d.field("compression.quantize_bits", ca.quantize_bits, cb.quantize_bits);
  d.field("compression.quantize_block", ca.quantize_block, cb.quantize_block);
  const auto &ba = ca.boundary, &bb = cb.boundary;
  d.enumeration("compression.boundary.method", ba.method, bb.method);
  d.field("compression.boundary.rank", ba.rank, bb.rank);
  d.field("compression.boundary.topk_fraction", ba.topk_fraction, bb.topk_fraction);
  d.field("compression.boundary.bits", ba.quantize_bits, bb.quantize_bits);
  d.field("compression.boundary.block", ba.quantize_block, bb.quantize_block);

  const auto &na = a.network, &nb = b.network;
  d.enumeration("network.model", na.model, nb.model);
  d.enumeration("network.topology", na.topology, nb.topology);
  d.field("network.nodes", na.nodes, nb.nodes);
  d.link("network", na.link, nb.link);
  d.list("network.node_links", na.node_links, nb.node_links,
         [&](const std::string& p, const sim::NodeLink& x, const sim::NodeLink& y) {
           d.field(p + ".node", x.node, y.node);
           d.link(p + ".link", x.link, y.link);
         });
  const auto pair = [&](const std::string& p, const sim::PairLink& x, const sim::PairLink& y) {
    d.field(p + ".a", x.a, y.a);
    d.field(p + ".b", x.b, y.b);
    d.link(p + ".link", x.link, y.link);
  };
  d.list("network.pair_links", na.pair_links, nb.pair_links, pair);
  d.list("network.clusters", na.clusters, nb.clusters,
         [&](const std::string& p, const sim::Cluster& x, const sim::Cluster& y) {
           d.field(p + ".nodes", x.nodes, y.nodes);
           d.link(p + ".access", x.access, y.access);
         });
  d.link("network.wan", na.wan, nb.wan);
  d.list("network.wan_links", na.wan_links, nb.wan_links, pair);
  d.field("network.tcp.send_buffer", na.tcp.send_buffer_bytes, nb.tcp.send_buffer_bytes);
  d.enumeration("network.tcp.congestion_control", na.tcp.congestion_control, nb.tcp.congestion_control);
  d.enumeration("network.tcp.connections", na.tcp.connections, nb.tcp.connections);
  d.field("network.simgrid.size", na.simgrid_config.size(), nb.simgrid_config.size());
  for (size_t i = 0; i < na.simgrid_config.size() && i < nb.simgrid_config.size(); ++i) {
    d.field("network.simgrid", na.simgrid_config[i].first, nb.simgrid_config[i].first);
    d.field("network.simgrid." + na.simgrid_config[i].first, na.simgrid_config[i].second, nb.simgrid_config[i].second);
  }

  d.device("devices.default_profile", a.devices.default_profile, b.devices.default_profile);
  d.list("devices.node_profiles", a.devices.node_profiles, b.devices.node_profiles,
         [&](const std::string& p, const auto& x, const auto& y) {
           d.field(p + ".node", x.first, y.first);
           d.device(p + ".profile", x.second, y.second);
         });
  d.enumeration("devices.dtype", a.devices.dtype, b.devices.dtype);
  d.enumeration("devices.timing", a.devices.timing, b.devices.timing);

  const auto &ta = a.training, &tb = b.training;
  d.field("training.steps", ta.steps, tb.steps);
  d.field("training.batch_size", ta.batch_size, tb.batch_size);
  d.field("training.lr", ta.lr, tb.lr);
  d.field("training.lr_warmup_steps", ta.lr_warmup_steps, tb.lr_warmup_steps);
  d.field("training.weight_decay", ta.weight_decay, tb.weight_decay);
  d.field("training.grad_clip", ta.grad_clip, tb.grad_clip);
  d.field("training.seed", ta.seed, tb.seed);
  d.field("training.data", ta.data, tb.data);
  d.field("training.tokenizer", ta.tokenizer, tb.tokenizer);
  d.field("training.eval_every", ta.eval_every, tb.eval_every);
  d.field("training.validation_fraction", ta.validation_fraction, tb.validation_fraction);
  d.field("training.eval_batches", ta.eval_batches, tb.eval_batches);
  d.field("training.checkpoint_every", ta.checkpoint_every, tb.checkpoint_every);
  d.field("training.backend", ta.backend, tb.backend);

  const auto &ja = a.projection.scenario, &jb = b.projection.scenario;
  d.field("projection.scenario", std::string(ja ? ja->name : "none"), std::string(jb ? jb->name : "none"));
  if (ja && jb) {
    const std::string inner = scenario_difference(*ja, *jb);
    if (!inner.empty()) d.difference("projection.scenario." + inner);
  }
  return d.first();
}

}  // namespace lowband
