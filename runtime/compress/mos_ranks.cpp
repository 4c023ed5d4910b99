#include "runtime/compress/mos_ranks.h"

namespace lowband::compress {

std::optional<MosRanks> mos_ranks(const Scenario& s) {
  if (s.compression.method != CompressionMethod::mos) return std::nullopt;
  MosRanks r;
  r.head_dim = s.model.head_dim();
  r.k = s.compression.k_rank(r.head_dim);
  r.v = s.compression.v_rank(r.head_dim);
  r.layers = s.model.layers;
  for (int l = 0; l < r.layers; ++l) r.compressed_layers += s.compression.kv_layer_compressed(l, r.layers) ? 1 : 0;
  return r;
}

std::string describe(const MosRanks& r) {
  const std::string ranks = "K rank " + std::to_string(r.k) + " / V rank " + std::to_string(r.v) + " of " +
                            std::to_string(r.head_dim) + " per head; ";
  const std::string of = " of " + std::to_string(r.layers);
  // Compressed layers are always the first ones (only the final layer may be left out).
  if (r.compressed_layers == 0) return ranks + "no layer compressed (the one layer is the final one, uncompressed)";
  const std::string span = r.compressed_layers == 1 ? "layer 0" : "layers 0–" + std::to_string(r.compressed_layers - 1);
  return ranks + span + of + " compressed" + (r.compressed_layers < r.layers ? ", final layer uncompressed" : "");
}

nlohmann::json to_json(const MosRanks& r) {
  return {{"k", r.k}, {"v", r.v}, {"head_dim", r.head_dim}, {"compressed_layers", r.compressed_layers},
          {"layers", r.layers}};
}

}  // namespace lowband::compress
