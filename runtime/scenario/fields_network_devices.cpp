// Field tables: network (which keys a topology allows comes from here; the
// values are read by parse_network.cpp) and devices (dtype and timing read and
// written from here; the profiles by parse_devices.cpp and to_json.cpp).
#include "runtime/scenario/fields_build.h"
#include "sim/simgrid_settings.h"

namespace lowband::fields {

using namespace build;

namespace {

const Applies kStarMesh = {"topology", {"star", "full_mesh"}};
const Applies kClusters = {"topology", {"clusters"}};

// The default scenario's network turned into clusters (or explicit links), for the tests.
const std::string kClustersNetwork =
    R"(network={"model": "ideal", "topology": "clusters", "clusters": [{"nodes": 2, "bandwidth": "1Gbps", )"
    R"("latency": "1ms"}, {"nodes": 2, "bandwidth": "1Gbps", "latency": "1ms"}], )"
    R"("wan": {"bandwidth": "100Mbps", "latency": "10ms"}})";
const std::string kExplicitNetwork =
    R"(network={"model": "ideal", "topology": "explicit", "nodes": 4, "links": [)"
    R"({"between": [0, 1], "bandwidth": "1Gbps", "latency": "1ms"}, )"
    R"({"between": [1, 2], "bandwidth": "1Gbps", "latency": "1ms"}, )"
    R"({"between": [2, 3], "bandwidth": "1Gbps", "latency": "1ms"}]})";

Field on(Field f, std::vector<std::string> sets) { return tested_from(std::move(f), "", std::move(sets)); }

DeviceConfig& devices_of(Scenario& s) { return s.devices; }
const At<DeviceConfig> kDevices = devices_of;

}  // namespace

Section network_section() {
  return {
      "network",
      "`network`",
      {},
      {doc_choice("model", words_of(sim::network_model_words()),
                {"**required**",
                 "ideal: SimGrid CM02, no cross-traffic, no TCP window (α-β times exactly); tcp: lowband's TCP model "
                 "fitted to real Linux TCP (`sim/tcp_model.h`, `analysis/network-fidelity/`): payload 1448/1514 of the "
                 "line rate, a window cap from `tcp.send_buffer`, handshake and slow start on fresh connections, "
                 "slow start again after an idle RTO on fresh and idle ones. "
                 "Echoed in every output",
                 "\"tcp\""}),
       doc_only("source", Kind::string, "string",
                {"`\"\"`",
                 "where the network's figures come from and when they were measured: documentation, echoed in "
                 "`scenario.json`, read by nothing. Each measured network under `scenarios/networks/` gives its own",
                 "\"iperf3 between our two sites, 2026-01\""}),
       doc_choice("message_order", words_of(sim::message_order_words()),
                {"\"concurrent\"",
                 "messages of one kind from one node to another that are ready at once: concurrent, each its own "
                 "flow sharing the path; fifo, one stream per source, destination and kind, each message's bytes "
                 "after the previous one's (as on one TCP connection; `sim/network.h`); connection, one stream per "
                 "source and destination whatever the kind (one TCP connection per pair of ranks, as MPI keeps); "
                 "under tcp a message written while the one before still sends follows its bytes without a "
                 "latency of its own",
                 "\"fifo\""}),
       doc_choice("topology", words_of(sim::topology_words()),
                {"**required**", "decides which keys below are allowed", "\"full_mesh\""}),
       doc_only("nodes", Kind::integer, "integer ≥ 1",
                {"**required** (clusters: the sum of the cluster sizes)",
                 "nodes of the network; with clusters optional, and if given it must equal the sum", "8"}),
       doc_only("bandwidth", Kind::bandwidth, "bandwidth",
                {"**required**",
                 "star: every access link (its download when `upload_bandwidth` is given); full_mesh: every pair link. "
                 "Every link's bandwidth, here and below, is 1Kbps..1000Tbps (1 Pbps): SimGrid cannot time a "
                 "bandwidth near its solver's precision, and none slower than a modem or faster than a petabit is real",
                 "\"1Gbps\"", kStarMesh}),
       doc_only("upload_bandwidth", Kind::bandwidth, "bandwidth",
                {"`bandwidth`",
                 "every access link's upload (asymmetric access, e.g. 500 Mbps down / 110 Mbps up: a node's messages "
                 "out share it, its messages in share `bandwidth`; the two directions never share)",
                 "\"100Mbps\"", {"topology", {"star"}}}),
       doc_only("latency", Kind::duration, "duration",
                {"**required**",
                 "star: every access link, one way (a path crosses two); full_mesh: every pair link. Every link's "
                 "latency, here and below, is 0s or 1ns..1000s: SimGrid's clock works to 1 ns, and no terrestrial or "
                 "satellite path takes 1000 s",
                 "\"5ms\"", kStarMesh}),
       doc_only("overrides", Kind::array,
                "array of `{\"node\", \"bandwidth\"?, \"upload_bandwidth\"?, \"latency\"?}` (full_mesh: "
                "`{\"between\": [a, b], \"bandwidth\"?, \"latency\"?}`)",
                {"`[]`",
                 "star and clusters: per-node access link (global node index; unset fields keep the node's values, "
                 "except that a `bandwidth` without `upload_bandwidth` is the node's both ways; each node at most "
                 "once); full_mesh: per-pair link, a ≠ b, each pair at most once",
                 R"([{"node": 1, "bandwidth": "1Gbps"}])", {"topology", {"star", "full_mesh", "clusters"}}}),
       on(doc_only("clusters", Kind::array,
                   "array (≥ 2) of `{\"nodes\", \"bandwidth\", \"upload_bandwidth\"?, \"latency\"}`",
                   {"**required**",
                    "each cluster's size and access links (`upload_bandwidth` as for star); nodes are numbered "
                    "cluster by cluster",
                    R"([{"nodes": 2, "bandwidth": "10Gbps", "latency": "1ms"}, )"
                    R"({"nodes": 2, "bandwidth": "1Gbps", "latency": "1ms"}])",
                    kClusters}),
          {kClustersNetwork}),
       on(doc_only("wan", Kind::object, "`{\"bandwidth\", \"latency\"}`",
                   {"**required**", "the link between each pair of clusters",
                    R"({"bandwidth": "1Gbps", "latency": "10ms"})", kClusters}),
          {kClustersNetwork}),
       on(doc_only("wan_overrides", Kind::array, "array of `{\"between\": [ci, cj], \"bandwidth\"?, \"latency\"?}`",
                   {"`[]`", "per cluster pair", R"([{"between": [0, 1], "bandwidth": "1Gbps"}])", kClusters}),
          {kClustersNetwork}),
       on(doc_only("links", Kind::array, "array of `{\"between\": [a, b], \"bandwidth\", \"latency\"}`",
                   {"**required**", "every node must be reachable from node 0; routes take the fewest hops",
                    R"([{"between": [0, 1], "bandwidth": "1Gbps", "latency": "1ms"}, )"
                    R"({"between": [1, 2], "bandwidth": "1Gbps", "latency": "1ms"}, )"
                    R"({"between": [0, 3], "bandwidth": "1Gbps", "latency": "1ms"}])",
                    {"topology", {"explicit"}}}),
          {kExplicitNetwork}),
       doc_only("tcp", Kind::object, "`{\"send_buffer\"?, \"congestion_control\"?, \"connections\"?}`",
                {"see below", "the tcp model's settings", R"({"send_buffer": "1MiB"})", {"model", {"tcp"}}}),
       doc_only("simgrid", Kind::object, "object of SimGrid setting → string, number or boolean",
                {"`{}`",
                 "for experts: passed to SimGrid (`Engine::set_config`) after the model's own settings, so it can "
                 "override them; echoed wherever the network is printed. Only these, checked before anything runs "
                 "(`sim/simgrid_settings.h`; any other is an error naming `network.simgrid.KEY`): " +
                     sim::simgrid_settings_allowed(),
                 R"({"network/crosstraffic": "0"})"}),
       doc_only("dynamics", Kind::array,
                "array of `{\"node\"? or \"between\"?, one of \"bandwidth\" \"latency\" \"state\" \"speed\": trace}` "
                "(below)",
                {"`[]`",
                 "how links and nodes change over the run (`sim/dynamics.h`): each entry a target (`node`: a node's "
                 "compute and its links; `between`: a node pair's link, full_mesh and explicit (a listed link), or a "
                 "cluster pair's WAN link; neither: every link or node), one quantity and its trace, a factor of the "
                 "nominal value over the run's clock. `[]`: a constant network",
                 R"([{"bandwidth": {"daily": {"low": 0.5, "low_at": "20h"}}}])"}),
       tested_from(doc_only("restart", Kind::object, "`{\"stall_timeout\": duration ≥ 1s, \"relaunch\": duration}`",
                {"absent: a step waits",
                 "what a run does when a node or link it needs is down (needs a `state` trace): a step stalled that "
                 "long without a break gives up (a collective's watchdog); the run relaunches (`relaunch`: start the "
                 "processes, load the checkpoint) and redoes the steps since its last checkpoint "
                 "(`training.checkpoint_every`). `summary.json` counts the restarts",
                 R"({"stall_timeout": "10min", "relaunch": "2min"})"}),
                   "", {R"(network.dynamics=[{"node": 1, "state": {"steps": [["10s", 0], ["20s", 1]]}}])"})}};
}

Section devices_section() {
  const std::string custom =
      R"([{"name": "mine", "peak_tflops_fp32": %, "memory_bandwidth": "1TBps", "memory": "16GiB", "efficiency": 0.5}])";
  const auto custom_with = [&](const std::string& tflops) {
    std::string s = custom;
    return s.replace(s.find('%'), 1, tflops);
  };
  return {
      "devices",
      "`devices`",
      {},
      {doc_only("profile", Kind::string, "profile name",
                {"`\"cpu\"`",
                 "built-in: `A100-40GB`, `A100-80GB`, `H100-SXM`, `RTX-4090`, `L4`, `cpu` (`sim/device_profile.cpp`), "
                 "or a custom one",
                 "\"A100-40GB\""}),
       choice("dtype", kDevices, &DeviceConfig::dtype, sim::dtype_words(),
              {"`\"bf16\"`", "compute precision", "\"tf32\""}),
       choice("timing", kDevices, &DeviceConfig::timing, device_timing_words(),
                {"`\"auto\"`",
                 "where `lowband run` takes compute seconds from: a steady clock around the kernels that ran here "
                 "(`measured`), or the device profile (`profile`); `auto` is `measured` when every rank's profile is "
                 "`cpu` and `training.backend` is `cpu`, else `profile`",
                 "\"profile\""}),
       doc_only("overrides", Kind::array, "array of `{\"node\", \"profile\"}`",
                {"`[]`", "per-node profile", R"([{"node": 1, "profile": "L4"}])"}),
       // An unused custom profile is not recorded: the example is one in use.
       tested_from(doc_only("custom_profiles", Kind::array, "array (below)",
                            {"`[]`", "names must differ from the built-ins and each other; only those in use are "
                                     "recorded in the resolved scenario",
                             custom_with("20")}),
                   custom_with("10"), {"devices.profile=mine"})}};
}

}  // namespace lowband::fields
