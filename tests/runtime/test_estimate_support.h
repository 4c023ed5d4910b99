#pragma once
// Small scenarios built in code for the estimate, context-schedule and cost-model
// tests (no files, no loader), so each test states its shapes next to its expectation.
#include <stdexcept>

#include "runtime/scenario/scenario.h"
#include "sim/device_profile.h"

namespace lowband::testing {

inline sim::DeviceProfile builtin_device(const char* name) {
  const sim::DeviceProfile* p = sim::find_builtin_device(name);
  if (!p) throw std::logic_error(std::string("no built-in device ") + name);
  return *p;
}

// A device so fast that every compute task takes ~1e-20 s.
inline sim::DeviceProfile instant_device() {
  sim::DeviceProfile d;
  d.name = "instant";
  d.peak_flops_fp32 = d.peak_flops_bf16 = 1e30;
  d.memory_bandwidth_bytes_per_s = 1e30;
  d.efficiency = 1;
  return d;
}

// 2 layers, d_model 256, 4 heads (head_dim 64), 4 kv heads, 4096 tokens over P
// ranks (zigzag, ring, overlap) on a full mesh of 1 Gbps / 1 ms links, A100-80GB, bf16.
inline Scenario small_cp_scenario(int ranks = 4) {
  Scenario s;
  s.name = "small-cp";
  s.model.layers = 2;
  s.model.d_model = 256;
  s.model.heads = 4;
  s.model.kv_heads = 4;
  s.model.ffn_hidden = 1024;
  s.model.vocab = 1000;
  s.model.seq_len = 4096;
  s.model.bytes_per_element = 2;
  s.parallel.context = ranks;
  s.network.model = sim::NetworkModel::ideal;
  s.network.topology = sim::Topology::full_mesh;
  s.network.nodes = ranks;
  s.network.link = {1e9 / 8, 1e-3};
  s.devices.default_profile = builtin_device("A100-80GB");
  s.devices.dtype = sim::DType::bf16;
  s.training.batch_size = 1;
  return s;
}

// small_cp_scenario's model with 4 layers and untied embeddings, 4 sequences per
// step, on `stages` pipeline stages (one per node) of `microbatches` microbatches.
inline Scenario small_pp_scenario(int stages, int microbatches) {
  Scenario s = small_cp_scenario(1);
  s.name = "small-pp";
  s.model.layers = 4;
  s.model.tie_embeddings = false;
  s.training.batch_size = 4;
  s.parallel.pipeline = stages;
  s.parallel.microbatches = microbatches;
  s.network.nodes = stages;
  return s;
}

}  // namespace lowband::testing
