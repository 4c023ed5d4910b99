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

const Words<CpSplit>& cp_split_words() {
  static const Words<CpSplit> words = {{"zigzag", CpSplit::zigzag}, {"contiguous", CpSplit::contiguous}};
  return words;
}

const Words<PipelineSchedule>& pipeline_schedule_words() {
  static const Words<PipelineSchedule> words = {{"1f1b", PipelineSchedule::one_f_one_b},
                                                {"gpipe", PipelineSchedule::gpipe}};
  return words;
}

const Words<CpExchange>& cp_exchange_words() {
  static const Words<CpExchange> words = {{"ring", CpExchange::ring}, {"all_gather", CpExchange::all_gather}};
  return words;
}

const Words<MosRotation>& mos_rotation_words() {
  static const Words<MosRotation> words = {
      {"learned", MosRotation::learned}, {"fixed", MosRotation::fixed}, {"random", MosRotation::random}};
  return words;
}

const Words<KFrame>& k_frame_words() {
  static const Words<KFrame> words = {{"pre_rope", KFrame::pre_rope}, {"post_rope", KFrame::post_rope}};
  return words;
}

const Words<OwnerKv>& owner_kv_words() {
  static const Words<OwnerKv> words = {{"exact", OwnerKv::exact}, {"reconstructed", OwnerKv::reconstructed}};
  return words;
}

const Words<CompressionMethod>& compression_method_words() {
  static const Words<CompressionMethod> words = {{"none", CompressionMethod::none}, {"mos", CompressionMethod::mos},
                                                 {"topk", CompressionMethod::topk}, {"quantize", CompressionMethod::quantize},
                                                 {"drop", CompressionMethod::drop}};
  return words;
}

const Words<WeightSync>& weight_sync_words() {
  static const Words<WeightSync> words = {{"all_reduce", WeightSync::all_reduce}, {"sparse", WeightSync::sparse},
                                          {"sparse_grad", WeightSync::sparse_grad}, {"topk_grad", WeightSync::topk_grad},
                                          {"sparse_update", WeightSync::sparse_update},
                                          {"lowrank_grad", WeightSync::lowrank_grad}};
  return words;
}

const char* weight_sync_name(WeightSync w) { return word_of(weight_sync_words(), w).c_str(); }

const Words<DataSyncMethod>& data_sync_method_words() {
  static const Words<DataSyncMethod> words = {{"all_reduce", DataSyncMethod::all_reduce},
                                              {"diloco", DataSyncMethod::diloco},
                                              {"sparseloco", DataSyncMethod::sparseloco}};
  return words;
}

const Words<SparseAverage>& sparse_average_words() {
  static const Words<SparseAverage> words = {{"all", SparseAverage::all}, {"chosen", SparseAverage::chosen}};
  return words;
}

const Words<DataSyncExchange>& data_sync_exchange_words() {
  static const Words<DataSyncExchange> words = {{"all_gather", DataSyncExchange::all_gather},
                                                {"relay", DataSyncExchange::relay}};
  return words;
}

const Words<BoundaryMethod>& boundary_method_words() {
  static const Words<BoundaryMethod> words = {
      {"none", BoundaryMethod::none},       {"subspace", BoundaryMethod::subspace},
      {"lowrank", BoundaryMethod::lowrank}, {"embedding_residual", BoundaryMethod::embedding_residual},
      {"topk", BoundaryMethod::topk},       {"quantize", BoundaryMethod::quantize}};
  return words;
}

const Words<DeviceTiming>& device_timing_words() {
  static const Words<DeviceTiming> words = {
      {"auto", DeviceTiming::automatic}, {"measured", DeviceTiming::measured}, {"profile", DeviceTiming::profile}};
  return words;
}

const char* data_sync_method_name(DataSyncMethod m) { return word_of(data_sync_method_words(), m).c_str(); }

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
