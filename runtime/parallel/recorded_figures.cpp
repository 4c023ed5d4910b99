// RecordedFigures: a real step's measured compute seconds and codec message
// bytes, looked up by the schedule builder (context_schedule.h) task by task.
#include <string>

#include "runtime/parallel/context_trainer.h"

namespace lowband::parallel {

void RecordedFigures::reset(int P, int layers) {
  ranks.assign(size_t(P), RankTimes{});
  for (auto& r : ranks) {
    r.layers.assign(size_t(layers), LayerTimes{});
    for (auto& l : r.layers) l.attention.assign(size_t(P), 0.0), l.attention_bwd.assign(size_t(P), 0.0);
  }
  kv_bytes.assign(size_t(layers), std::vector<double>(size_t(P), 0.0));
  dkv_bytes = kv_bytes;
}

double RecordedFigures::compute_seconds(int rank, const char* tag, int layer, int kv_owner) const {
  if (!measured) return -1.0;
  const RankTimes& r = ranks.at(size_t(rank));
  const std::string t = tag;
  if (t == "embed") return r.embed;
  if (t == "lm_head") return r.lm_head;
  if (t == "lm_head_bwd") return r.lm_head_bwd;
  if (t == "embed_bwd") return r.embed_bwd;
  if (t == "optimizer") return r.optimizer;
  const LayerTimes& l = r.layers.at(size_t(layer));
  if (t == "qkv") return l.qkv;
  if (t == "mlp") return l.mlp;
  if (t == "mlp_bwd") return l.mlp_bwd;
  if (t == "qkv_bwd") return l.qkv_bwd;
  if (t == "attention") return l.attention.at(size_t(kv_owner));
  if (t == "attention_bwd") return l.attention_bwd.at(size_t(kv_owner));
  return -1.0;  // a task this trainer does not time: the device profile's
}

double RecordedFigures::kv_message_bytes(int layer, int owner, bool backward) const {
  return (backward ? dkv_bytes : kv_bytes).at(size_t(layer)).at(size_t(owner));
}

}  // namespace lowband::parallel
