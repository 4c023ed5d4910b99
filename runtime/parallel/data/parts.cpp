#include "runtime/parallel/data/parts.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace lowband::parallel {

std::vector<ModelPart> common_parts(const std::vector<std::vector<int>>& first_layers, int layers) {
  std::vector<int> cuts;
  for (const std::vector<int>& firsts : first_layers) {
    for (size_t s = 0; s < firsts.size(); ++s)
      if ((s == 0 && firsts[s] != 0) || (s > 0 && firsts[s] <= firsts[s - 1]) || firsts[s] >= layers)
        throw std::invalid_argument("common_parts: stage " + std::to_string(s) + " starts at layer " +
                                    std::to_string(firsts[s]) + " of " + std::to_string(layers));
    cuts.insert(cuts.end(), firsts.begin(), firsts.end());
  }
  cuts.push_back(0);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  cuts.push_back(layers);
  std::vector<ModelPart> parts;
  for (size_t i = 0; i + 1 < cuts.size(); ++i)
    parts.push_back({cuts[i], cuts[i + 1], i == 0, i + 2 == cuts.size()});
  return parts;
}

int64_t part_offset(const model::ParamLayout& stage, const ModelPart& part) {
  const model::StageSpan& s = stage.span();
  const bool holds = part.first_layer >= stage.first_layer() && part.end_layer <= stage.end_layer() &&
                     (!part.embedding || s.embedding) && (!part.head || s.head) &&
                     (part.embedding || part.first_layer > stage.first_layer() || !s.embedding) &&
                     (part.head || part.end_layer < stage.end_layer() || !s.head);
  if (!holds)
    throw std::invalid_argument("part_offset: a stage of layers [" + std::to_string(stage.first_layer()) + ", " +
                                std::to_string(stage.end_layer()) + ") does not hold layers [" +
                                std::to_string(part.first_layer) + ", " + std::to_string(part.end_layer) + ")");
  // The embedding opens the buffer; otherwise the part opens with its first layer.
  return part.embedding ? stage.embedding() : stage.layer(part.first_layer).attn_norm;
}

}  // namespace lowband::parallel
