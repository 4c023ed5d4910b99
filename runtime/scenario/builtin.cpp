// Built-in scenarios: copies of files under scenarios/, so that `lowband` runs with
// no file at hand. tests/runtime/test_scenario_files.cpp checks that each copy
// parses to the same Scenario as its file: edit both together.
#include "common/error.h"
#include "runtime/scenario/load.h"
#include "runtime/scenario/parse_internal.h"

namespace lowband {
namespace {

struct Builtin {
  const char* name;
  const char* file;  // under scenarios/
  std::string text;
};

const std::vector<Builtin>& builtins() {
  static const std::vector<Builtin> list = {
      {"default", "quickstart.json", R"json({
  "name": "quickstart",
  "description": "The built-in default: a 4-layer byte-level model small enough to train on a 2-core CPU in about a minute, split over 4 context-parallel ranks on a 300 Mbps star network.",
  "model": {
    "layers": 4,
    "d_model": 256,
    "heads": 4,
    "kv_heads": 4,
    "ffn_hidden": 688,
    "vocab": 256,
    "seq_len": 1024,
    "bytes_per_element": 2,
    "tie_embeddings": false
  },
  "parallel": {
    "context": 4,
    "split": "zigzag",
    "exchange": "ring",
    "overlap": true
  },
  "compression": {
    "method": "none"
  },
  "network": {
    "model": "ideal",
    "topology": "star",
    "nodes": 4,
    "bandwidth": "300Mbps",
    "latency": "1ms"
  },
  "devices": {
    "profile": "cpu",
    "dtype": "fp32"
  },
  "training": {
    "steps": 200,
    "batch_size": 1,
    "lr": 0.001,
    "lr_warmup_steps": 20,
    "weight_decay": 0.01,
    "grad_clip": 1.0,
    "seed": 1,
    "data": "",
    "tokenizer": "byte",
    "eval_every": 50
  }
}
)json"},
      {"mos-paper-centralized-100gbps", "mos-paper-centralized-100gbps.json", R"json({
  "name": "mos-paper-centralized-100gbps",
  "description": "Mixtures-of-subspaces paper, centralised baseline: the 800M-parameter model (8 layers, d_model 2048, 132K context) over 8 A100-80GB on a 100 Gbps star; uncompressed context parallelism. Paper: about 56K tokens/s.",
  "model": {
    "layers": 8,
    "d_model": 2048,
    "heads": 8,
    "kv_heads": 8,
    "ffn_hidden": 8192,
    "vocab": 50257,
    "seq_len": 131072,
    "bytes_per_element": 2,
    "tie_embeddings": false
  },
  "parallel": {
    "context": 8,
    "split": "zigzag",
    "exchange": "ring",
    "overlap": true
  },
  "compression": {
    "method": "none",
    "weight_sync": "all_reduce"
  },
  "network": {
    "model": "ideal",
    "topology": "star",
    "nodes": 8,
    "bandwidth": "100Gbps",
    "latency": "5us"
  },
  "devices": {
    "profile": "A100-80GB",
    "dtype": "bf16"
  },
  "training": {
    "steps": 10000,
    "batch_size": 1,
    "lr": 0.0003,
    "lr_warmup_steps": 500,
    "weight_decay": 0.01,
    "grad_clip": 1.0,
    "seed": 1,
    "data": "",
    "tokenizer": "gpt2",
    "eval_every": 500
  }
}
)json"},
      {"mos-paper-decentralized-300mbps", "mos-paper-decentralized-300mbps.json", R"json({
  "name": "mos-paper-decentralized-300mbps",
  "description": "Mixtures-of-subspaces paper, decentralised and uncompressed: the same model and 8 A100-80GB, each node on its own 300 Mbps / 10 ms link. Paper: about 2.7K tokens/s.",
  "model": {
    "layers": 8,
    "d_model": 2048,
    "heads": 8,
    "kv_heads": 8,
    "ffn_hidden": 8192,
    "vocab": 50257,
    "seq_len": 131072,
    "bytes_per_element": 2,
    "tie_embeddings": false
  },
  "parallel": {
    "context": 8,
    "split": "zigzag",
    "exchange": "ring",
    "overlap": true
  },
  "compression": {
    "method": "none",
    "weight_sync": "all_reduce"
  },
  "network": {
    "model": "ideal",
    "topology": "star",
    "nodes": 8,
    "bandwidth": "300Mbps",
    "latency": "10ms"
  },
  "devices": {
    "profile": "A100-80GB",
    "dtype": "bf16"
  },
  "training": {
    "steps": 10000,
    "batch_size": 1,
    "lr": 0.0003,
    "lr_warmup_steps": 500,
    "weight_decay": 0.01,
    "grad_clip": 1.0,
    "seed": 1,
    "data": "",
    "tokenizer": "gpt2",
    "eval_every": 500
  }
}
)json"},
      {"mos-paper-mos-300mbps", "mos-paper-mos-300mbps.json", R"json({
  "name": "mos-paper-mos-300mbps",
  "description": "Mixtures-of-subspaces paper, decentralised with MoS: the same 300 Mbps / 10 ms network, K compressed by 98% and V by 95%, weights synchronised sparsely (5% of each tensor every step). Paper: about 55K tokens/s.",
  "model": {
    "layers": 8,
    "d_model": 2048,
    "heads": 8,
    "kv_heads": 8,
    "ffn_hidden": 8192,
    "vocab": 50257,
    "seq_len": 131072,
    "bytes_per_element": 2,
    "tie_embeddings": false
  },
  "parallel": {
    "context": 8,
    "split": "zigzag",
    "exchange": "ring",
    "overlap": true
  },
  "compression": {
    "method": "mos",
    "k_ratio": 0.98,
    "v_ratio": 0.95,
    "warmup_steps": 500,
    "weight_sync": "sparse",
    "sync_fraction": 0.05,
    "sync_every": 1
  },
  "network": {
    "model": "ideal",
    "topology": "star",
    "nodes": 8,
    "bandwidth": "300Mbps",
    "latency": "10ms"
  },
  "devices": {
    "profile": "A100-80GB",
    "dtype": "bf16"
  },
  "training": {
    "steps": 10000,
    "batch_size": 1,
    "lr": 0.0003,
    "lr_warmup_steps": 500,
    "weight_decay": 0.01,
    "grad_clip": 1.0,
    "seed": 1,
    "data": "",
    "tokenizer": "gpt2",
    "eval_every": 500
  }
}
)json"},
  };
  return list;
}

const Builtin& find(const std::string& name) {
  for (const auto& b : builtins())
    if (name == b.name) return b;
  std::string known;
  for (const auto& b : builtins()) known += (known.empty() ? "" : ", ") + std::string(b.name);
  throw InputError("", "no built-in scenario named \"" + name + "\" (built-ins: " + known + ")");
}

}  // namespace

std::vector<std::string> builtin_scenario_names() {
  std::vector<std::string> names;
  for (const auto& b : builtins()) names.emplace_back(b.name);
  return names;
}

const std::string& builtin_scenario_text(const std::string& name) { return find(name).text; }

std::string builtin_scenario_file(const std::string& name) { return find(name).file; }

Scenario builtin_scenario(const std::string& name, const std::vector<std::string>& overrides) {
  const std::string source = "builtin:" + name;
  nlohmann::json document = scenario_detail::parse_json_text(find(name).text, source);
  apply_overrides(document, overrides);
  return scenario_detail::parse_with_overrides(document, source, overrides);
}

}  // namespace lowband
