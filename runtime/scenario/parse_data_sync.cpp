// parallel.data_sync: how data-parallel replicas keep their weights together
// (every-step gradient all-reduce, DiLoCo, SparseLoCo; runtime/sync/). A key of
// another method is an error.
#include "runtime/scenario/fields.h"
#include "runtime/scenario/parse_internal.h"

namespace lowband::scenario_detail {

DataSyncConfig parse_data_sync(const ObjectReader& parallel) {
  if (!parallel.has("data_sync")) return {};
  const fields::Section& table = fields::section("parallel.data_sync");
  const ObjectReader r = parallel.object("data_sync", table.keys());
  const std::string method = r.choice_or("method", "all_reduce", words_of(data_sync_method_words()));
  // Only all-gathered messages can go through a relay that merely stores and
  // forwards them; diloco's and all_reduce's are summed on the way (all-reduce).
  if (r.has("exchange") && method != "sparseloco")
    fail(r.path_of("exchange"), "only used with method \"sparseloco\" (its messages are all-gathered), but method is \"" +
                                    method + "\" (" + (method == "diloco" ? "pseudo-gradients" : "gradients") +
                                    " are all-reduced)", {r.path_of("method")});
  Scenario read;
  // SparseLoCo's published runs apply the aggregate as it is (α = 1); DiLoCo's
  // Nesterov outer step uses 0.7 (public configurations: 0.6-1.0).
  read.parallel.data_sync.outer_lr = method == "sparseloco" ? 1.0 : 0.7;
  fields::read_generic(table, r, read);  // a key of another method (or exchange) is an error there
  const DataSyncConfig d = read.parallel.data_sync;
  // Indices within a chunk are 12 bits: at most 4096 elements, a square so that a
  // 2-D tensor's chunks are sqrt(chunk) x sqrt(chunk) tiles.
  int side = 1;
  while (side * side < d.chunk) ++side;
  if (side * side != d.chunk)
    fail(r.path_of("chunk"), std::to_string(d.chunk) + " is not a square: expected s * s elements (s x s tiles of "
                                                        "2-D tensors), s in 1..64");
  if (d.topk_per_chunk > d.chunk)
    fail(r.path_of("topk_per_chunk"), std::to_string(d.topk_per_chunk) + " entries kept of a chunk of " +
                                          std::to_string(d.chunk) + ": expected at most the chunk",
         {r.path_of("chunk")});
  if (d.outer_gradient_bits > 8 && d.outer_gradient_bits != 32)
    fail(r.path_of("outer_gradient_bits"), "expected 1..8 (2^bits bins) or 32 (float32), got " +
                                               std::to_string(d.outer_gradient_bits));
  if (d.value_bits > 8 && d.value_bits != 32)
    fail(r.path_of("value_bits"), "expected 1..8 (2^bits bins) or 32 (float32 values), got " +
                                      std::to_string(d.value_bits));
  if (d.delay_steps > d.inner_steps)
    fail(r.path_of("delay_steps"), std::to_string(d.delay_steps) + " steps: expected at most inner_steps (" +
                                       std::to_string(d.inner_steps) + "), so that each exchange is merged before the "
                                                                       "next one is issued",
         {r.path_of("inner_steps")});
  if (d.fragments > d.inner_steps)
    fail(r.path_of("fragments"), std::to_string(d.fragments) + " fragments: expected at most inner_steps (" +
                                     std::to_string(d.inner_steps) + "), one sync step each",
         {r.path_of("inner_steps")});
  if (d.fragments > 1 && int64_t(d.delay_steps) * d.fragments > d.inner_steps)
    fail(r.path_of("delay_steps"), std::to_string(d.delay_steps) + " steps with " + std::to_string(d.fragments) +
                                       " fragments: expected delay_steps x fragments at most inner_steps (" +
                                       std::to_string(d.inner_steps) + "), one fragment's exchange in flight at a time",
         {r.path_of("fragments"), r.path_of("inner_steps")});
  if (d.eager && d.delay_steps != d.inner_steps)
    fail(r.path_of("eager"), "the eager update replaces a round's stale share by the next round's: it needs delay_steps "
                             "= inner_steps (" + std::to_string(d.inner_steps) + "), got " +
                                 std::to_string(d.delay_steps),
         {r.path_of("delay_steps")});
  if (d.partial_participation()) {
    const std::string key = d.deadline_seconds >= 0 ? "deadline_seconds" : "quorum";
    if (d.delay_steps > 0 || d.fragments > 1)
      fail(r.path_of(key), "partial participation closes a whole round at once: it needs delay_steps 0 and fragments "
                           "1, got " + std::to_string(d.delay_steps) + " and " + std::to_string(d.fragments),
           {r.path_of(d.delay_steps > 0 ? "delay_steps" : "fragments")});
  }
  return d;  // relay_node stays -1 without a key: resolved with the network (parse_document)
}

}  // namespace lowband::scenario_detail
