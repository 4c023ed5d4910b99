#pragma once
// The K/V codec a scenario asks for (compression.method): "none" gives the
// identity, "mos" mixtures of subspaces, "topk", "quantize" and "drop" the
// baselines (with their uncompressed warm-up and final layer: uncompressed_parts.h).
#include <memory>

#include "runtime/compress/kv_codec.h"
#include "runtime/scenario/scenario.h"

namespace lowband::compress {

std::unique_ptr<KvCodec> make_kv_codec(const Scenario& scenario);

}  // namespace lowband::compress
