#pragma once
// The parts of the model that data-parallel replicas of different shapes
// synchronise (heterogeneous replicas, layout_trainer.h). A pipeline stage holds
// a contiguous range of layers, and its flat parameter buffer (model::StageSpan)
// is the whole model's buffer cut at the same places: embedding, layers in
// order, final norm, LM head. So the replicas' stage boundaries, merged, cut the
// model into parts that every replica holds whole on exactly one stage:
//   stages [0,2) [2,4) and [0,1) [1,2) [2,3) [3,4) -> parts [0,1) [1,2) [2,3) [3,4)
// (the embedding goes with the part of layer 0, the head with the last), and
// each part is a contiguous run of every holder's buffer, at an offset of its own.
#include <cstdint>
#include <vector>

#include "runtime/model/param_layout.h"

namespace lowband::parallel {

struct ModelPart {
  int first_layer = 0, end_layer = 0;  // layers [first_layer, end_layer)
  bool embedding = false, head = false;
  model::StageSpan span() const { return {first_layer, end_layer - first_layer, embedding, head}; }
  // Whether a stage of layers [first, end) holds the whole part.
  bool within(int first, int end) const { return first_layer >= first && end_layer <= end; }
};

// The coarsest common refinement of the replicas' stages: `first_layers[q]` is
// replica q's stages' first layers (stage order, starting at 0), `layers` the
// model's. Throws std::invalid_argument for a list that is not increasing from 0
// inside [0, layers).
std::vector<ModelPart> common_parts(const std::vector<std::vector<int>>& first_layers, int layers);

// Where `part` starts in the flat buffer of a stage laid out as `stage`.
// std::invalid_argument unless the stage holds the whole part.
int64_t part_offset(const model::ParamLayout& stage, const ModelPart& part);

}  // namespace lowband::parallel
