// to_json: the resolved scenario, every knob explicit, quantities as exact unit
// strings, so that parse_scenario(to_json(s)) == s. Written into run directories.
#include <algorithm>
#include <cmath>

#include "runtime/scenario/fields.h"
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

// A trace as parse reads it back: every parameter explicit, a file's points inline
// as steps (so a run directory needs no file beside it).
json trace_json(const sim::TraceSpec& t) {
  switch (t.kind) {
    case sim::TraceSpec::Kind::points: {
      json steps = json::array();
      for (const auto& p : t.points) steps.push_back({units::exact_duration(p.seconds), p.value});
      return {{"steps", steps}};
    }
    case sim::TraceSpec::Kind::daily:
      return {{"daily",
               {{"low", t.low}, {"low_at", units::exact_duration(t.low_at_s)},
                {"period", units::exact_duration(t.period_s)}, {"sample", units::exact_duration(t.sample_s)}}}};
    case sim::TraceSpec::Kind::random_walk:
      return {{"random_walk",
               {{"seed", t.seed}, {"every", units::exact_duration(t.every_s)}, {"sigma", t.sigma}, {"min", t.min},
                {"max", t.max}}}};
    case sim::TraceSpec::Kind::outages:
      return {{"outages",
               {{"seed", t.seed}, {"mean_up", units::exact_duration(t.mean_up_s)},
                {"mean_down", units::exact_duration(t.mean_down_s)}, {"value", t.value}}}};
  }
  return nullptr;
}

json dynamics_json(const std::vector<sim::NetworkDynamic>& dynamics) {
  json out = json::array();
  for (const auto& d : dynamics) {
    json j = json::object();
    if (d.target.kind == sim::DynamicTarget::Kind::node) j["node"] = d.target.a;
    if (d.target.kind == sim::DynamicTarget::Kind::between) j["between"] = {d.target.a, d.target.b};
    j[word_of(sim::dynamic_quantity_words(), d.quantity)] = trace_json(d.trace);
    out.push_back(j);
  }
  return out;
}

json network_json(const sim::NetworkSpec& n) {
  json j = {{"model", word_of(sim::network_model_words(), n.model)}, {"nodes", n.nodes}};
  j["topology"] = word_of(sim::topology_words(), n.topology);
  if (!n.source.empty()) j["source"] = n.source;  // absent: none given
  switch (n.topology) {
    case sim::Topology::star:
    case sim::Topology::full_mesh:
      j.update(link_json(n.link));
      j["overrides"] = n.topology == sim::Topology::star ? node_links_json(n.node_links) : pairs_json(n.pair_links);
      break;
    case sim::Topology::clusters: {
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
      j["links"] = pairs_json(n.pair_links);
      break;
  }
  if (n.model == sim::NetworkModel::tcp)
    j["tcp"] = {{"send_buffer", units::exact_bytes(n.tcp.send_buffer_bytes)},
                {"congestion_control", word_of(sim::congestion_control_words(), n.tcp.congestion_control)},
                {"connections", word_of(sim::connection_state_words(), n.tcp.connections)}};
  if (!n.simgrid_config.empty()) {
    json sg = json::object();
    for (const auto& [key, value] : n.simgrid_config) sg[key] = value;
    j["simgrid"] = sg;
  }
  if (n.message_order != sim::MessageOrder::concurrent)  // absent: concurrent
    j["message_order"] = word_of(sim::message_order_words(), n.message_order);
  if (!n.dynamics.empty()) j["dynamics"] = dynamics_json(n.dynamics);  // absent: a constant network
  if (n.restart)
    j["restart"] = {{"stall_timeout", units::exact_duration(n.restart->stall_timeout_seconds)},
                    {"relaunch", units::exact_duration(n.restart->relaunch_seconds)}};
  return j;
}

json devices_json(const Scenario& s) {
  const DeviceConfig& d = s.devices;
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
  json j = {{"profile", d.default_profile.name}, {"overrides", overrides}, {"custom_profiles", custom}};
  fields::write_generic(fields::section("devices"), s, j);  // dtype, timing
  return j;
}

// The keys of a section its field table writes (those that apply).
json generic_json(const std::string& section, const Scenario& s) {
  json j = json::object();
  fields::write_generic(fields::section(section), s, j);
  return j;
}

json compression_json(const Scenario& s) {
  json j = generic_json("compression", s);
  j["boundary"] = generic_json("compression.boundary", s);
  return j;
}

}  // namespace

nlohmann::json to_json(const Scenario& s) {
  const auto& p = s.parallel;
  nlohmann::json out = {
      {"name", s.name},
      {"description", s.description},
      {"model", generic_json("model", s)},
      {"parallel", generic_json("parallel", s)},
      {"compression", compression_json(s)},
      {"network", network_json(s.network)},
      {"devices", devices_json(s)},
      {"training", generic_json("training", s)},
  };
  out["parallel"]["data_sync"] = generic_json("parallel.data_sync", s);
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
