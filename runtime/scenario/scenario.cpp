// Methods of the Scenario structs (ModelConfig::parameters() is in runtime/cost_model.cpp).
#include <algorithm>
#include <cmath>

#include "runtime/scenario/scenario.h"

namespace lowband {
namespace {

// Rank kept per head: an explicit rank, or head_dim·(1 − ratio) rounded, at least 1.
int kept_rank(CompressionMethod method, int rank_set, double ratio, int head_dim) {
  if (method == CompressionMethod::none) return head_dim;
  if (rank_set > 0) return rank_set;
  const long r = std::lround(head_dim * (1.0 - ratio));
  return static_cast<int>(std::clamp<long>(r, 1, head_dim));
}

}  // namespace

OwnerKv default_owner_kv(CompressionMethod method) {
  return method == CompressionMethod::mos ? OwnerKv::reconstructed : OwnerKv::exact;
}

const char* weight_sync_name(WeightSync w) {
  switch (w) {
    case WeightSync::sparse: return "sparse";
    case WeightSync::sparse_grad: return "sparse_grad";
    case WeightSync::topk_grad: return "topk_grad";
    case WeightSync::sparse_update: return "sparse_update";
    case WeightSync::lowrank_grad: return "lowrank_grad";
    case WeightSync::all_reduce: break;
  }
  return "all_reduce";
}

const char* data_sync_method_name(DataSyncMethod m) {
  switch (m) {
    case DataSyncMethod::diloco: return "diloco";
    case DataSyncMethod::sparseloco: return "sparseloco";
    case DataSyncMethod::all_reduce: break;
  }
  return "all_reduce";
}

int CompressionConfig::k_rank(int head_dim) const { return kept_rank(method, k_rank_set, k_ratio, head_dim); }
int CompressionConfig::v_rank(int head_dim) const { return kept_rank(method, v_rank_set, v_ratio, head_dim); }

bool CompressionConfig::kv_layer_compressed(int layer, int layers) const {
  if (method == CompressionMethod::none) return false;
  return compress_final_layer || layer + 1 < layers;
}

const sim::DeviceProfile& DeviceConfig::for_node(int node) const {
  for (const auto& [n, profile] : node_profiles)
    if (n == node) return profile;
  return default_profile;
}

int ParallelConfig::stage_layer_count(int stage, int layers) const {
  if (!stage_layers.empty()) return stage_layers.at(size_t(stage));
  return layers / pipeline;
}

int ParallelConfig::stage_first_layer(int stage, int layers) const {
  int first = 0;
  for (int s = 0; s < stage; ++s) first += stage_layer_count(s, layers);
  return first;
}

}  // namespace lowband
