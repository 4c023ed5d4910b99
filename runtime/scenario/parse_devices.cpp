// The "devices" section: a default profile, per-node overrides, and profiles the
// scenario defines itself. Built-in profiles come from sim/device_profile.h.
#include <algorithm>
#include <set>

#include "runtime/scenario/fields.h"
#include "runtime/scenario/parse_internal.h"

namespace lowband::scenario_detail {
namespace {

sim::DeviceProfile parse_custom(const ObjectReader& r) {
  sim::DeviceProfile p;
  p.name = r.string("name");
  if (p.name.empty()) throw SchemaError(r.path_of("name"), r.path_of("name") + ": expected a non-empty name");
  if (sim::find_builtin_device(p.name))
    throw SchemaError(r.path_of("name"), r.path_of("name") + ": \"" + p.name +
                                             "\" is a built-in profile; give a custom profile another name");
  // Physical ranges, so that a step's compute time stays a time (1e-300 TFLOP/s made
  // steps of 1e298 s): 1 MFLOP/s..1 EFLOP/s, memory 1 MBps..1000 TBps, efficiency
  // at least 0.1 % of peak.
  constexpr double kTera = 1e12;
  const Bounds tflops = Bounds::closed(1e-6, 1e6);
  p.peak_flops_fp32 = r.number("peak_tflops_fp32", tflops) * kTera;
  for (const char* key : {"peak_tflops_tf32", "peak_tflops_bf16"}) {
    const double v = r.number_or(key, 0, Bounds::closed(0, 1e6));
    if (v != 0 && !tflops.contains(v))
      throw SchemaError(r.path_of(key), r.path_of(key) + ": expected 0 (as fp32) or a number in [1e-06, 1e+06], got " +
                                            r.need(key).dump());
    (std::string(key) == "peak_tflops_tf32" ? p.peak_flops_tf32 : p.peak_flops_bf16) = v * kTera;
  }
  p.memory_bandwidth_bytes_per_s = r.bandwidth("memory_bandwidth");
  if (!(p.memory_bandwidth_bytes_per_s >= 1e6))
    throw SchemaError(r.path_of("memory_bandwidth"), r.path_of("memory_bandwidth") + ": " +
                                                         r.need("memory_bandwidth").dump() +
                                                         " is out of range: a device's memory bandwidth is at least 1MBps");
  p.memory_bytes = r.bytes("memory");
  if (!(p.memory_bytes > 0)) throw SchemaError(r.path_of("memory"), r.path_of("memory") + ": must be positive");
  p.efficiency = r.number("efficiency", Bounds::closed(1e-3, 1));
  return p;
}

const sim::DeviceProfile& lookup(const json& v, const std::string& path,
                                 const std::vector<sim::DeviceProfile>& custom) {
  const std::string name = as_string(v, path);
  for (const auto& p : custom)
    if (p.name == name) return p;
  if (const auto* p = sim::find_builtin_device(name)) return *p;
  std::vector<std::string> known;
  for (const auto& p : sim::builtin_device_profiles()) known.push_back(p.name);
  for (const auto& p : custom) known.push_back(p.name);
  throw SchemaError(path, unknown_key_message(name, path, known, "device profile"));
}

}  // namespace

DeviceConfig parse_devices(const ObjectReader& root, int nodes) {
  DeviceConfig d;
  const json empty = json::object();
  const ObjectReader r(root.has("devices") ? root.need("devices") : empty, root.path_of("devices"),
                       fields::section("devices").keys());
  std::vector<sim::DeviceProfile> custom;
  if (r.has("custom_profiles")) {
    const std::string path = r.path_of("custom_profiles");
    const json& array = as_array(r.need("custom_profiles"), path);
    for (size_t i = 0; i < array.size(); ++i) {
      const ObjectReader c(array[i], join_path(path, std::to_string(i)),
                           {"name", "peak_tflops_fp32", "peak_tflops_tf32", "peak_tflops_bf16",
                            "memory_bandwidth", "memory", "efficiency"});
      sim::DeviceProfile p = parse_custom(c);
      for (const auto& q : custom)
        if (q.name == p.name)
          throw SchemaError(c.path_of("name"), c.path_of("name") + ": profile \"" + p.name + "\" is defined twice");
      custom.push_back(p);
    }
  }
  const json default_name = "cpu";
  d.default_profile = lookup(r.has("profile") ? r.need("profile") : default_name, r.path_of("profile"), custom);
  Scenario read;  // dtype and timing: the field table's
  fields::read_generic(fields::section("devices"), r, read);
  d.dtype = read.devices.dtype;
  d.timing = read.devices.timing;
  if (r.has("overrides")) {
    const std::string path = r.path_of("overrides");
    const json& array = as_array(r.need("overrides"), path);
    std::set<int64_t> seen;
    for (size_t i = 0; i < array.size(); ++i) {
      const ObjectReader o(array[i], join_path(path, std::to_string(i)), {"node", "profile"});
      const json& node_value = o.need("node");
      if (!node_value.is_number_integer() || node_value.get<int64_t>() < 0 || node_value.get<int64_t>() >= nodes)
        throw SchemaError(o.path_of("node"), o.path_of("node") + ": expected a node index in 0.." +
                                                 std::to_string(nodes - 1) + " (the network has " +
                                                 std::to_string(nodes) + " nodes), got " + node_value.dump());
      const int node = node_value.get<int>();
      if (!seen.insert(node).second)
        throw SchemaError(o.path_of("node"), o.path_of("node") + ": node " + std::to_string(node) +
                                                 " is overridden twice");
      d.node_profiles.emplace_back(node, lookup(o.need("profile"), o.path_of("profile"), custom));
    }
  }
  return d;
}

}  // namespace lowband::scenario_detail
