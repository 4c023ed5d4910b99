#pragma once
// What MoS keeps, for reports (`lowband estimate`'s table and JSON, summary.json's
// `codec_ranks`): the rank per head of K and of V out of head_dim, and how many of
// the model's layers have their K/V compressed (all but the final one unless
// compression.compress_final_layer).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/scenario/scenario.h"

namespace lowband::compress {

struct MosRanks {
  int k = 0, v = 0, head_dim = 0;
  int compressed_layers = 0, layers = 0;
};

// Empty unless compression.method is mos.
std::optional<MosRanks> mos_ranks(const Scenario& scenario);
// "K rank 3 / V rank 6 of 128 per head; layers 0–2 of 4 compressed, final layer uncompressed"
std::string describe(const MosRanks& ranks);
// {"k": 3, "v": 6, "head_dim": 128, "compressed_layers": 3, "layers": 4}
nlohmann::json to_json(const MosRanks& ranks);

}  // namespace lowband::compress
