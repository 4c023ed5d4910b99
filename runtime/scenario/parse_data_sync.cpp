// parallel.data_sync: how data-parallel replicas keep their weights together
// (every-step gradient all-reduce, DiLoCo, SparseLoCo; runtime/sync/). A key of
// another method is an error.
#include "runtime/scenario/fields.h"
#include "runtime/scenario/parse_internal.h"

namespace lowband::scenario_detail {

DataSyncConfig parse_data_sync(const ObjectReader& parallel) {
  DataSyncConfig d;
  if (!parallel.has("data_sync")) return d;
  const ObjectReader r = parallel.object("data_sync", fields::section("parallel.data_sync").keys());
  const std::string method = r.choice_or("method", "all_reduce", {"all_reduce", "diloco", "sparseloco"});
  d.method = method == "diloco"       ? DataSyncMethod::diloco
             : method == "sparseloco" ? DataSyncMethod::sparseloco
                                      : DataSyncMethod::all_reduce;
  for (const char* key : {"inner_steps", "outer_lr"}) only_with(r, key, method, {"diloco", "sparseloco"});
  only_with(r, "outer_momentum", method, {"diloco"});
  for (const char* key : {"topk_per_chunk", "chunk", "value_bits", "error_decay", "average"})
    only_with(r, key, method, {"sparseloco"});

  d.inner_steps = static_cast<int>(r.integer_or("inner_steps", d.inner_steps, 1, kMaxInt));
  // SparseLoCo's published runs apply the aggregate as it is (α = 1); DiLoCo's
  // Nesterov outer step uses 0.7 (public configurations: 0.6-1.0).
  const double lr_default = d.method == DataSyncMethod::sparseloco ? 1.0 : 0.7;
  d.outer_lr = r.number_or("outer_lr", lr_default, Bounds::above(0));
  d.outer_momentum = r.number_or("outer_momentum", d.outer_momentum, Bounds::half_open(0, 1));

  // Indices within a chunk are 12 bits: at most 4096 elements, a square so that a
  // 2-D tensor's chunks are sqrt(chunk) x sqrt(chunk) tiles.
  d.chunk = static_cast<int>(r.integer_or("chunk", d.chunk, 1, 4096));
  int side = 1;
  while (side * side < d.chunk) ++side;
  if (side * side != d.chunk)
    fail(r.path_of("chunk"), std::to_string(d.chunk) + " is not a square: expected s * s elements (s x s tiles of "
                                                        "2-D tensors), s in 1..64");
  d.topk_per_chunk = static_cast<int>(r.integer_or("topk_per_chunk", d.topk_per_chunk, 1, kMaxInt));
  if (d.topk_per_chunk > d.chunk)
    fail(r.path_of("topk_per_chunk"), std::to_string(d.topk_per_chunk) + " entries kept of a chunk of " +
                                          std::to_string(d.chunk) + ": expected at most the chunk",
         {r.path_of("chunk")});
  d.value_bits = static_cast<int>(r.integer_or("value_bits", d.value_bits, 1, 32));
  if (d.value_bits > 8 && d.value_bits != 32)
    fail(r.path_of("value_bits"), "expected 1..8 (2^bits bins) or 32 (float32 values), got " +
                                      std::to_string(d.value_bits));
  d.error_decay = r.number_or("error_decay", d.error_decay, Bounds::closed(0, 1));
  d.average = r.choice_or("average", "all", {"all", "chosen"}) == "chosen" ? SparseAverage::chosen : SparseAverage::all;

  // Only all-gathered messages can go through a relay that merely stores and
  // forwards them; diloco's and all_reduce's are summed on the way (all-reduce).
  if (r.has("exchange") && d.method != DataSyncMethod::sparseloco)
    fail(r.path_of("exchange"), "only used with method \"sparseloco\" (its messages are all-gathered), but method is \"" +
                                    method + "\" (" + (d.method == DataSyncMethod::diloco ? "pseudo-gradients" : "gradients") +
                                    " are all-reduced)", {r.path_of("method")});
  d.exchange = r.choice_or("exchange", "all_gather", {"all_gather", "relay"}) == "relay" ? DataSyncExchange::relay
                                                                                         : DataSyncExchange::all_gather;
  if (r.has("relay_node") && d.exchange != DataSyncExchange::relay)
    fail(r.path_of("relay_node"), "only used with exchange \"relay\"", {r.path_of("exchange")});
  d.relay_node = static_cast<int>(r.integer_or("relay_node", -1, 0, kMaxInt));  // -1: resolved with the network
  return d;
}

}  // namespace lowband::scenario_detail
