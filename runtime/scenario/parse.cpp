// parse_scenario: the model, parallel, compression, devices and training sections,
// and the checks that span sections. The network section is in parse_network.cpp.
#include <algorithm>
#include <cctype>
#include <tuple>

#include "common/error.h"
#include "runtime/scenario/fields.h"
#include "runtime/scenario/load.h"
#include "runtime/scenario/parse_internal.h"
#include "runtime/scenario/recall_shape.h"

namespace lowband::scenario_detail {

void fail(const std::string& path, const std::string& what, std::vector<std::string> related) {
  throw SchemaError(path, path + ": " + what, std::move(related));
}

void only_with(const ObjectReader& r, const std::string& key, const std::string& method,
               const std::vector<std::string>& methods, const std::string& method_key) {
  if (!r.has(key) || std::find(methods.begin(), methods.end(), method) != methods.end()) return;
  std::string wanted;
  for (const auto& m : methods) wanted += (wanted.empty() ? "\"" : " or \"") + m + "\"";
  fail(r.path_of(key), "only used with " + method_key + " " + wanted + ", but " + method_key + " is \"" + method + "\"");
}

namespace {

// The generic keys come from the field table (fields_model_training.cpp).
ModelConfig parse_model(const ObjectReader& root) {
  const ObjectReader r = root.object("model", fields::section("model").keys());
  Scenario read;
  fields::read_generic(fields::section("model"), r, read);
  ModelConfig m = read.model;
  if (!r.has("kv_heads")) m.kv_heads = m.heads;
  if (m.d_model % m.heads != 0)
    fail(r.path_of("heads"), "d_model " + std::to_string(m.d_model) + " is not divisible by heads " +
                                 std::to_string(m.heads), {r.path_of("d_model")});
  if (m.heads % m.kv_heads != 0)
    fail(r.path_of("kv_heads"), "heads " + std::to_string(m.heads) + " is not divisible by kv_heads " +
                                    std::to_string(m.kv_heads), {r.path_of("heads")});
  return m;
}

// A list of network node indices (checked against network.nodes in check_across).
std::vector<int> node_list(const json& v, const std::string& path) {
  const json& a = as_array(v, path);
  if (a.empty() || a.size() > size_t(kMaxNodes)) fail(path, "expected 1.." + std::to_string(kMaxNodes) + " node indices");
  std::vector<int> out;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_number_integer() || a[i].get<int64_t>() < 0 || a[i].get<int64_t>() >= kMaxNodes)
      fail(join_path(path, std::to_string(i)), "expected a node index, got " + a[i].dump());
    out.push_back(int(a[i].get<int64_t>()));
  }
  return out;
}

// parallel.replicas: one object per data-parallel replica. They fix `data` and
// the placement; pipeline and context are the first replica's (the trainer
// says where replicas of other shapes are not trained yet).
void parse_replicas(const ObjectReader& r, ParallelConfig& p) {
  const std::string path = r.path_of("replicas");
  const json& a = as_array(r.need("replicas"), path);
  if (a.empty()) fail(path, "expected at least one replica");
  if (r.has("placement")) fail(path, "give the nodes in each replica, not also parallel.placement", {r.path_of("placement")});
  for (size_t i = 0; i < a.size(); ++i) {
    const ObjectReader one(a[i], join_path(path, std::to_string(i)), {"pipeline", "context", "nodes", "compress_boundaries"});
    ReplicaConfig rc;
    rc.pipeline = static_cast<int>(one.integer_or("pipeline", 1, 1, kMaxNodes));
    rc.context = static_cast<int>(one.integer_or("context", 1, 1, kMaxNodes));
    rc.nodes = node_list(one.need("nodes"), one.path_of("nodes"));
    rc.compress_boundaries = one.boolean_or("compress_boundaries", false);
    if (int64_t(rc.nodes.size()) != int64_t(rc.pipeline) * rc.context)
      fail(one.path_of("nodes"), std::to_string(rc.nodes.size()) + " nodes for " + std::to_string(rc.pipeline) +
                                     " stages x " + std::to_string(rc.context) + " context ranks");
    p.placement.insert(p.placement.end(), rc.nodes.begin(), rc.nodes.end());
    p.replicas.push_back(std::move(rc));
  }
  const ReplicaConfig& only = p.replicas[0];
  // The degrees follow from the replicas; where also given, they must agree.
  for (const auto& [key, given, from_replicas] : {std::tuple{"data", p.data, int(a.size())},
                                                  std::tuple{"pipeline", p.pipeline, only.pipeline},
                                                  std::tuple{"context", p.context, only.context}})
    if (r.has(key) && given != from_replicas)
      fail(path, "the replicas make parallel." + std::string(key) + " " + std::to_string(from_replicas) +
                     ", but it is " + std::to_string(given), {r.path_of(key)});
  p.data = int(a.size());
  p.pipeline = only.pipeline;
  p.context = only.context;
}

ParallelConfig parse_parallel(const ObjectReader& root) {
  if (!root.has("parallel")) return {};
  const ObjectReader r = root.object("parallel", fields::section("parallel").keys());
  Scenario read;
  fields::read_generic(fields::section("parallel"), r, read);
  ParallelConfig p = read.parallel;
  if (r.has("placement")) p.placement = node_list(r.need("placement"), r.path_of("placement"));
  if (r.has("replicas")) parse_replicas(r, p);
  parse_stages(r, p);
  p.data_sync = parse_data_sync(r);
  return p;
}

// compression.weight_sync and the keys of its methods (runtime/sync/replica_sync.h).
void parse_weight_sync(const ObjectReader& r, CompressionConfig& c) {
  const std::string sync = r.choice_or("weight_sync", "all_reduce", words_of(weight_sync_words()));
  c.weight_sync = value_of(weight_sync_words(), sync);
  c.sync_fraction = r.number_or("sync_fraction", 0.05, Bounds{0, 1, true, false});
  // all_reduce sends every coordinate: a fraction other than the default would do nothing.
  if (c.weight_sync == WeightSync::all_reduce && c.sync_fraction != 0.05)
    fail(r.path_of("sync_fraction"), "is the fraction a sparse or low-rank weight_sync sends, but weight_sync is "
                                     "\"all_reduce\" (every coordinate): leave it out", {r.path_of("weight_sync")});
  c.sync_every = static_cast<int>(r.integer_or("sync_every", 1, 1, kMaxInt));
  // all_reduce sums the gradients every step; the error-feedback variants step every
  // rank on one aggregate every step. (1 is recorded in every resolved scenario.)
  if (c.sync_every != 1 && c.weight_sync != WeightSync::sparse)
    fail(r.path_of("sync_every"), std::string("weight_sync \"") + sync + "\" exchanges every step: expected 1 or no key",
         {r.path_of("weight_sync")});
  c.sync_value_bits = static_cast<int>(r.integer_or("sync_value_bits", 2, 1, 32));
  if (c.sync_value_bits > 8 && c.sync_value_bits != 32)
    fail(r.path_of("sync_value_bits"), "expected 1..8 or 32, got " + std::to_string(c.sync_value_bits));
  // Only topk_grad quantises what it sends (the resolved scenario records it only there).
  if (r.has("sync_value_bits") && c.weight_sync != WeightSync::topk_grad)
    fail(r.path_of("sync_value_bits"), std::string("weight_sync \"") + sync + "\" sends no quantised values (only "
                                       "\"topk_grad\" does): no key", {r.path_of("weight_sync")});
}

CompressionConfig parse_compression(const ObjectReader& root) {
  CompressionConfig c;
  if (!root.has("compression")) return c;
  const ObjectReader r = root.object("compression", fields::section("compression").keys());
  const std::string method = r.choice_or("method", "none", words_of(compression_method_words()));
  c.method = value_of(compression_method_words(), method);
  // A method's own keys under another method: refused, as the table says where each applies.
  for (const fields::Field& f : fields::section("compression").fields)
    if (f.applies.key == "method") only_with(r, f.key, method, f.applies.values);
  // "ratio": one knob across methods (what `lowband sweep` varies), resolved here into
  // the method's own keys, so the resolved scenario has no "ratio". 0 is uncompressed.
  const bool has_ratio = r.has("ratio");
  const double ratio = has_ratio ? r.number("ratio", Bounds::half_open(0, 1)) : 0;
  if (has_ratio && ratio != 0 && (method == "none" || method == "quantize" || method == "drop"))
    fail(r.path_of("ratio"), "method \"" + method + "\" has no ratio to set (only 0, uncompressed, is allowed): " +
                                 "use method \"mos\" or \"topk\"", {r.path_of("method")});
  for (const char* key : {"k_ratio", "v_ratio", "k_rank", "v_rank", "topk_fraction"})
    if (has_ratio && r.has(key)) fail(r.path_of(key), std::string("give ratio or ") + key + ", not both", {r.path_of("ratio")});
  if (has_ratio && ratio > 0 && method == "mos") c.k_ratio = c.v_ratio = ratio;
  for (const char* t : {"k", "v"}) {
    if (c.method != CompressionMethod::mos || has_ratio) break;
    const std::string ratio_key = std::string(t) + "_ratio", rank_key = std::string(t) + "_rank";
    if (r.has(ratio_key) && r.has(rank_key))
      fail(r.path_of(rank_key), "give " + ratio_key + " or " + rank_key + ", not both");
    if (!r.has(ratio_key) && !r.has(rank_key))
      fail(r.path(), "method \"mos\" needs " + ratio_key + " (fraction removed) or " + rank_key);
    double& ratio = *t == 'k' ? c.k_ratio : c.v_ratio;
    int& rank = *t == 'k' ? c.k_rank_set : c.v_rank_set;
    if (r.has(ratio_key)) ratio = r.number(ratio_key, Bounds::half_open(0, 1));
    if (r.has(rank_key)) rank = static_cast<int>(r.integer(rank_key, 1, kMaxInt));
  }
  if (c.method == CompressionMethod::mos) {
    c.rotation = value_of(mos_rotation_words(), r.choice_or("rotation", "learned", words_of(mos_rotation_words())));
    c.warm_start = r.boolean_or("warm_start", true);
    c.k_frame = value_of(k_frame_words(), r.choice_or("k_frame", "pre_rope", words_of(k_frame_words())));
    c.rotation_params = static_cast<int>(r.integer_or("rotation_params", 1, 1, kMaxRotationParams));
    if (c.rotation == MosRotation::fixed && c.rotation_params != 1)
      fail(r.path_of("rotation_params"), "rotation \"fixed\" has no θ to give generators: expected 1 or no key",
           {r.path_of("rotation")});
    c.fit_during_lr_warmup = r.boolean_or("fit_during_lr_warmup", false);
  }
  c.owner_kv = value_of(owner_kv_words(), r.choice_or("owner_kv", word_of(owner_kv_words(), default_owner_kv(c.method)),
                                                      words_of(owner_kv_words())));
  // MoS fits U0 after a warm-up (500 steps unless told; "none" records the same, to no effect, as it
  // always has); topk, quantize and drop compress from step 0 unless told.
  const bool baseline = c.method == CompressionMethod::topk || c.method == CompressionMethod::quantize ||
                        c.method == CompressionMethod::drop;
  c.warmup_steps = static_cast<int>(r.integer_or("warmup_steps", !baseline && c.warm_start ? 500 : 0, 0, kMaxInt));
  // MoS leaves the final layer uncompressed (the paper's setup); the baselines compress every layer unless told.
  c.compress_final_layer = r.boolean_or("compress_final_layer", c.method != CompressionMethod::mos);
  if (!c.warm_start && c.warmup_steps != 0)
    fail(r.path_of("warmup_steps"), "warm_start is false (random U0, compressed from step 0): expected 0 or no key");
  c.topk_fraction = has_ratio && method == "topk" ? 1 - ratio : r.number_or("topk_fraction", 0.1, Bounds{0, 1, true, false});
  c.quantize_bits = static_cast<int>(r.integer_or("bits", 4, 4, 8));
  if (c.quantize_bits != 4 && c.quantize_bits != 8)
    fail(r.path_of("bits"), "expected 4 or 8, got " + std::to_string(c.quantize_bits));
  c.quantize_block = static_cast<int>(r.integer_or("block", 64, 1, kMaxInt));
  parse_weight_sync(r, c);
  if (has_ratio && ratio == 0) {
    // Uncompressed whatever the method: the identity codec, keeping only the keys
    // every method shares (so to_json and back give the same scenario).
    CompressionConfig plain;
    plain.warmup_steps = c.warmup_steps;
    plain.weight_sync = c.weight_sync;
    plain.sync_fraction = c.sync_fraction;
    plain.sync_every = c.sync_every;
    plain.sync_value_bits = c.sync_value_bits;
    c = plain;
  }
  c.boundary = parse_boundary(r);  // pipeline stage boundaries: independent of the K/V method
  return c;
}

TrainingConfig parse_training(const ObjectReader& root) {
  if (!root.has("training")) return {};
  const ObjectReader r = root.object("training", fields::section("training").keys());
  Scenario read;
  fields::read_generic(fields::section("training"), r, read);
  // Keys that would do nothing: refused with the reason.
  const TrainingConfig& t = read.training;
  if (t.data_source == "recall" && r.has("validation_fraction"))
    fail(r.path_of("validation_fraction"),
         "data_source \"recall\" generates its validation records from a stream of their own (nothing is held out): "
         "no key", {r.path_of("data_source")});
  if (t.data_source == "file" && t.validation_fraction == 0 && t.eval_every > 0)
    fail(r.path_of("eval_every"),
         "validation_fraction is 0: nothing is held out to evaluate on (give validation_fraction > 0, or eval_every 0)",
         {r.path_of("validation_fraction")});
  return read.training;
}

void check_name(const ObjectReader& root, const std::string& name) {
  const bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
  });
  // Names become run-directory names: keep them safe as path components.
  if (!ok || name == "." || name == "..")
    fail(root.path_of("name"), "expected a name of letters, digits, '-', '_' and '.', got \"" + name + "\"");
}

// The relay is a network node of its own: its link is the topology's (a star
// override gives it a fat one), and no rank runs on it.
void check_relay(const Scenario& s) {
  const DataSyncConfig& d = s.parallel.data_sync;
  if (d.exchange != DataSyncExchange::relay) return;
  const std::string key = "parallel.data_sync.relay_node";
  if (d.relay_node >= s.network.nodes)
    fail(key, "node " + std::to_string(d.relay_node) + ", but the network has " + std::to_string(s.network.nodes) +
                  " nodes (0.." + std::to_string(s.network.nodes - 1) + ")", {"network.nodes"});
  for (int r = 0; r < s.parallel.ranks(); ++r)
    if (s.parallel.node_of(r) == d.relay_node)
      fail(key, "node " + std::to_string(d.relay_node) + " runs rank " + std::to_string(r) +
                    ": the relay needs a node no rank runs on (network.nodes " + std::to_string(s.network.nodes) +
                    " for " + std::to_string(s.parallel.ranks()) + " ranks; without relay_node the relay is the last node)",
           {"network.nodes", "parallel.placement"});
}

// Generated keyed recall: no file, byte tokens, and pairs that fit the first block.
void check_recall(const Scenario& s) {
  if (s.training.data_source != "recall") return;
  if (!s.training.data.empty())
    fail("training.data", "\"" + s.training.data + "\" is not read with data_source \"recall\" (generated); leave it \"\"",
         {"training.data_source"});
  if (s.training.tokenizer != "byte")
    fail("training.tokenizer", "data_source \"recall\" generates byte tokens: expected \"byte\"",
         {"training.data_source"});
  try {
    recall_shape(s);
  } catch (const InputError& e) {
    const std::string what = e.what();
    fail(e.place(), what.substr(std::min(what.size(), e.place().size() + 2)),
         {"training.recall_key_tokens", "training.recall_value_tokens", "model.seq_len", "parallel.context"});
  }
}

// A projected run's step times are projection.scenario's estimate: a changing
// network (dynamics, restarts) on either side would be recorded and never replayed.
void check_projection_network(const Scenario& s) {
  if (!s.projection.scenario) return;
  const char* why = ": a projected run takes each step's time from projection.scenario's estimate and replays no "
                    "changing network; drop the key, or run the scenario without projection";
  if (!s.network.dynamics.empty()) fail("network.dynamics", std::string("given with projection") + why, {"projection"});
  if (s.network.restart) fail("network.restart", std::string("given with projection") + why, {"projection"});
  const sim::NetworkSpec& inner = s.projection.scenario->network;
  if (!inner.dynamics.empty())
    fail("projection.scenario.network.dynamics", std::string("the projected scenario's") + why, {"projection"});
  if (inner.restart) fail("projection.scenario.network.restart", std::string("the projected scenario's") + why, {"projection"});
}

// MoS fits U₀ at the end of its warm-up: no earlier than the learning rate's, as
// the paper sets it up, unless the scenario says it means to (an ablation).
// warmup_steps 0 fits nothing (a random U₀).
void check_mos_fit(const Scenario& s) {
  const CompressionConfig& c = s.compression;
  const int lr_warmup = s.training.lr_warmup_steps;
  if (c.method != CompressionMethod::mos || c.fit_during_lr_warmup || c.warmup_steps == 0 ||
      c.warmup_steps >= lr_warmup)
    return;
  fail("compression.warmup_steps",
       std::to_string(c.warmup_steps) + " fits U0 while the learning rate still warms up (training.lr_warmup_steps " +
           std::to_string(lr_warmup) + "): expected at least " + std::to_string(lr_warmup) +
           ", or compression.fit_during_lr_warmup true (an ablation)",
       {"training.lr_warmup_steps", "compression.fit_during_lr_warmup"});
}

void check_across(const Scenario& s) {
  const auto& p = s.parallel;
  const auto& m = s.model;
  check_replica_contexts(s);  // before the checks that read the first replica's context
  if (!p.placement.empty()) {
    const std::string where = p.replicas.empty() ? "parallel.placement" : "parallel.replicas";
    if (int(p.placement.size()) != p.ranks())
      fail(where, std::to_string(p.placement.size()) + " nodes for " + std::to_string(p.ranks()) + " ranks",
           {"parallel.context", "parallel.pipeline", "parallel.data"});
    std::vector<int> rank_on(size_t(s.network.nodes), -1);
    for (int r = 0; r < p.ranks(); ++r) {
      const int node = p.placement[size_t(r)];
      if (node >= s.network.nodes)
        fail(where, "rank " + std::to_string(r) + " on node " + std::to_string(node) + ", but the network has " +
                        std::to_string(s.network.nodes) + " nodes", {"network.nodes"});
      if (rank_on[size_t(node)] >= 0)
        fail(where, "ranks " + std::to_string(rank_on[size_t(node)]) + " and " + std::to_string(r) +
                        " both on node " + std::to_string(node) + " (one rank per node)");
      rank_on[size_t(node)] = r;
    }
  }
  if (p.ranks() > s.network.nodes) {
    // Data-parallel replicas multiply the ranks last: name their key when there are some.
    const bool data = p.data > 1;
    std::string shape = "context " + std::to_string(p.context);
    if (p.pipeline > 1) shape += " x pipeline " + std::to_string(p.pipeline);
    if (data) shape += " x data " + std::to_string(p.data);
    fail(data ? "parallel.data" : "parallel.context",
         std::to_string(p.ranks()) + " ranks " + (p.pipeline > 1 || data ? "(" + shape + ") " : "") + "need " +
             std::to_string(p.ranks()) + " nodes but network has " + std::to_string(s.network.nodes),
         {data ? "parallel.context" : "parallel.data", "parallel.pipeline", "network.nodes", "network.clusters",
          "network.topology"});
  }
  check_relay(s);
  const int64_t chunks = int64_t{p.context} * (p.split == CpSplit::zigzag ? 2 : 1);
  if (m.seq_len % chunks != 0)
    fail("model.seq_len", "seq_len " + std::to_string(m.seq_len) + " does not split into " + std::to_string(chunks) +
                              " equal chunks (context " + std::to_string(p.context) +
                              (p.split == CpSplit::zigzag ? ", zigzag: 2 chunks per rank)" : ", contiguous)"),
         {"parallel.context", "parallel.split"});
  const auto& c = s.compression;
  if (c.k_rank_set > m.head_dim())
    fail("compression.k_rank", "rank " + std::to_string(c.k_rank_set) + " exceeds head_dim " +
                                   std::to_string(m.head_dim()) + " (expected 1.." + std::to_string(m.head_dim()) + ")",
         {"model.d_model", "model.heads"});
  if (c.v_rank_set > m.head_dim())
    fail("compression.v_rank", "rank " + std::to_string(c.v_rank_set) + " exceeds head_dim " +
                                   std::to_string(m.head_dim()) + " (expected 1.." + std::to_string(m.head_dim()) + ")",
         {"model.d_model", "model.heads"});
  check_mos_fit(s);
  check_pipeline(s);
  check_layout_schema(s);
  check_dimension_keys_in_effect(s);
  check_recall(s);
  const int min_vocab = s.training.tokenizer == "gpt2" ? 50257 : 256;
  if (m.vocab < min_vocab)
    fail("model.vocab", "tokenizer \"" + s.training.tokenizer + "\" needs vocab >= " + std::to_string(min_vocab) +
                            ", got " + std::to_string(m.vocab), {"training.tokenizer"});
}

}  // namespace

Scenario parse_document(const json& document, const std::string& source) {
  if (document.is_object() && document.contains("sweep"))
    fail("sweep", "a sweep section makes this file a grid of scenarios: run it with \"lowband sweep FILE\" "
                  "(check every point with \"lowband sweep FILE --dry-run\"; estimate them with \"lowband estimate FILE\")");
  const ObjectReader root(document, "", fields::section("").keys());
  Scenario s;
  s.name = root.string("name");
  check_name(root, s.name);
  s.description = root.string_or("description", "");
  s.model = parse_model(root);
  s.parallel = parse_parallel(root);
  s.compression = parse_compression(root);
  s.network = parse_network(root, source);
  if (s.parallel.data_sync.exchange == DataSyncExchange::relay && s.parallel.data_sync.relay_node < 0)
    s.parallel.data_sync.relay_node = s.network.nodes - 1;  // the default: the last node
  s.devices = parse_devices(root, s.network.nodes);
  s.training = parse_training(root);
  // Partial participation checkpoints where a round closes: without a
  // training.checkpoint_every of its own, the default's next multiple of H.
  const DataSyncConfig& d = s.parallel.data_sync;
  const bool checkpoint_given = document.contains("training") && document["training"].is_object() &&
                                document["training"].contains("checkpoint_every");
  if (d.partial_participation() && !checkpoint_given && s.training.checkpoint_every % d.inner_steps != 0)
    s.training.checkpoint_every = (s.training.checkpoint_every / d.inner_steps + 1) * d.inner_steps;
  s.projection = parse_projection(root, source);
  check_projection_network(s);
  check_across(s);
  return s;
}

}  // namespace lowband::scenario_detail

namespace lowband {

Scenario parse_scenario(const nlohmann::json& document, const std::string& source) {
  try {
    Scenario s = scenario_detail::parse_document(document, source);
    s.source = source;
    return s;
  } catch (const scenario_detail::SchemaError& e) {
    throw InputError(source, e.what());
  }
}

}  // namespace lowband
