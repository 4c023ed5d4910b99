// Field tables: parallel and parallel.data_sync.
#include "runtime/scenario/fields_build.h"

namespace lowband::fields {

using namespace build;
using scenario_detail::kMaxInt;
using scenario_detail::kMaxNodes;

namespace {

ParallelConfig& parallel_of(Scenario& s) { return s.parallel; }
DataSyncConfig& data_sync_of(Scenario& s) { return s.parallel.data_sync; }

const Applies kLocal = {"method", {"diloco", "sparseloco"}};
const Applies kDiloco = {"method", {"diloco"}};
const Applies kSparse = {"method", {"sparseloco"}};

// parallel.all_reduce's field, written only where it is not the default ring.
Field written_unless_ring(Field f) {
  f.written = [](const Scenario& s) { return s.parallel.all_reduce != sim::AllReduceAlgorithm::ring; };
  return f;
}

// A key that came after run directories and checkpoints existed, written only
// where it differs from its default, so that theirs read as the same scenario.
template <class T>
Field written_unless(Field f, T DataSyncConfig::*member, T default_value) {
  f.written = [=](const Scenario& s) { return s.parallel.data_sync.*member != default_value; };
  return f;
}

}  // namespace

Section parallel_section() {
  const At<ParallelConfig> p = parallel_of;
  return {
      "parallel",
      "`parallel`",
      {"network.nodes=16", "training.batch_size=4", "parallel.pipeline=2"},
      {integer("context", p, &ParallelConfig::context, 1, kMaxNodes,
               {"`1`", "context-parallel degree P; ranks = context × pipeline × data ≤ network nodes (rank i runs on "
                       "node i unless `placement` says otherwise)", "2"}),
       integer("pipeline", p, &ParallelConfig::pipeline, 1, kMaxNodes,
               {"`1`",
                "pipeline stages (at most `model.layers`); stage s runs its layers on its own ranks and sends the "
                "residual stream of each microbatch to stage s + 1 (compressed by `compression.boundary`). With "
                "`context` > 1 each stage is `context` ranks (rank = stage × context + context rank), each holding its "
                "share of every microbatch; `run` and `estimate` take both",
                "4"}),
       doc_only("stage_layers", Kind::array, "array of integers ≥ 1, one per stage",
                {"model.layers / pipeline each",
                 "layers of each stage, first to last; they must sum to `model.layers`. Without it `model.layers` must "
                 "divide by `pipeline`",
                 "[3, 1]"}),
       integer("microbatches", p, &ParallelConfig::microbatches, 1, kMaxInt,
               {"`1`",
                "microbatches per step, each a replica's `training.batch_size` / microbatches sequences (must divide "
                "it): a pipeline's, or, in a replica without stages, the sequences each context-parallel rank keeps "
                "in flight, each layer's halves interleaved so that one microbatch's K/V cross the links while the "
                "others compute (needs `pipeline` or `context` > 1)",
                "2"}),
       choice("schedule", p, &ParallelConfig::schedule,
              pipeline_schedule_words(),
              {"`\"1f1b\"`",
               "order of each stage's microbatch forwards (F) and backwards (B): gpipe runs every F then every B; 1f1b "
               "alternates after a warm-up, holding at most `pipeline` microbatches' activations",
               "\"gpipe\""}),
       integer("data", p, &ParallelConfig::data, 1, kMaxNodes,
               {"`1`",
                "data-parallel replicas, each `pipeline` × `context` ranks training on its block of "
                "`training.batch_size / data` sequences (which must divide); how their weights meet: `data_sync`; "
                "`run` and `estimate` take it (`estimate`: every replica's step and the sync as the trainer records "
                "it, averaged over the sync period)",
                "2"}),
       doc_only("placement", Kind::array, "array of node indices",
                {"rank i on node i",
                 "the network node of each rank, in rank order (replica, then stage, then context rank); one rank per "
                 "node. Moves ranks onto the nodes of a heterogeneous network (e.g. a cluster of a `clusters` topology)",
                 "[15, 14, 13, 12, 11, 10, 9, 8]"}),
       doc_only("replicas", Kind::array, "array of objects",
                {"`data` identical replicas",
                 "per data-parallel replica: `pipeline`, `context` (integers, default 1), `nodes` (its ranks' nodes, "
                 "pipeline × context of them), `compress_boundaries` (bool). Gives `data`, `pipeline`, `context` and "
                 "the placement (the keys, where also given, must agree). Replicas of different pipelines train under "
                 "`data_sync` diloco or sparseloco (their weights meet part by part, the common refinement of their "
                 "stages; every replica needs the same `context`); synchronous all_reduce needs one shape. "
                 "`compress_boundaries` true: `compression.boundary` applies to that replica, the others send dense "
                 "boundaries (selective compression; under all_reduce every replica alike; an error on a one-stage "
                 "replica or with boundary method `none`, where it would do nothing); with `parallel.data` every "
                 "replica follows `compression.boundary`",
                 R"([{"pipeline": 2, "context": 4, "nodes": [8, 9, 10, 11, 12, 13, 14, 15]}])"}),
       choice("split", p, &ParallelConfig::split, cp_split_words(),
              {"`\"zigzag\"`", "zigzag: each rank holds one chunk from each end (balances causal attention)",
               "\"contiguous\""}),
       choice("exchange", p, &ParallelConfig::exchange, cp_exchange_words(),
              {"`\"ring\"`", "how K/V travel between ranks", "\"all_gather\""}),
       // Written only when not the ring, so that run directories and checkpoints from
       // before the key read as the same scenario.
       written_unless_ring(choice("all_reduce", p, &ParallelConfig::all_reduce,
                sim::all_reduce_algorithm_words(),
                {"`\"ring\"`",
                 "how every all-reduce (gradient sync, loss, codec) moves its bytes: `ring` — 2(P-1) rounds, one "
                 "link per rank; `direct` — each rank sends block j to rank j, then each sends its summed block "
                 "to all: 2 rounds over every link at once, the same bytes (fewer latencies; on a full mesh every "
                 "link busy). The sums are the same bits either way (ring order); the MPI transport does the "
                 "same, NCCL chooses its own",
                 "\"direct\""})),
       boolean("overlap", p, &ParallelConfig::overlap,
               {"`true`", "K/V transfers overlap attention on blocks already received", "false"}),
       doc_only("data_sync", Kind::object, "object",
                {"`{\"method\": \"all_reduce\"}`",
                 "how data-parallel replicas keep their weights together (below); read by the trainer "
                 "(`runtime/parallel/layout_trainer.h`)",
                 ""})}};
}

Section data_sync_section() {
  const At<DataSyncConfig> d = data_sync_of;
  const auto h = [](Field f) { return f; };  // parse_data_sync adds the checks across keys
  return {
      "parallel.data_sync",
      "`parallel.data_sync`",
      {"parallel.context=1", "parallel.data=2", "network.nodes=4", "training.batch_size=2"},
      {h(choice("method", d, &DataSyncConfig::method,
                data_sync_method_words(),
                {"`\"all_reduce\"`",
                 "all_reduce: gradients summed over replicas every step. diloco: Δ all-reduced (float32, 4 bytes per "
                 "parameter), outer Nesterov SGD. sparseloco: e ← β·e + Δ, the top-k entries of each chunk with 2-bit "
                 "values and 12-bit indices all-gathered, e keeps what was not sent, outer plain SGD",
                 "\"diloco\""})),
       h(integer("inner_steps", d, &DataSyncConfig::inner_steps, 1, kMaxInt,
                 {"`30`", "H, inner steps between outer steps", "10", kLocal, "steps"})),
       written_unless(integer("delay_steps", d, &DataSyncConfig::delay_steps, 0, kMaxInt,
                              {"`0`",
                               "τ, 0..H: the exchange issued after step t is merged after step t + τ, the inner steps "
                               "between running beside it on the network (0: the replicas wait for it; H: DiLoCoX's "
                               "one-step delay, the exchange hidden behind a whole round). An exchange whose merge "
                               "falls after the run's last step is never merged",
                               "3", kLocal, "steps"}),
                      &DataSyncConfig::delay_steps, 0),
       written_unless(number("local_weight", d, &DataSyncConfig::local_weight, Bounds::half_open(0, 1),
                             {"`0`",
                              "α: after a merge a replica's weights are α·θ_local + (1 − α)·θ_global (Streaming "
                              "DiLoCo's mixing, which keeps part of the τ inner steps run beside the exchange; 0: the "
                              "global weights)",
                              "0.5", kLocal}),
                      &DataSyncConfig::local_weight, 0.0),
       written_unless(integer("fragments", d, &DataSyncConfig::fragments, 1, kMaxInt,
                              {"`1`",
                               "F, at most H and `model.layers`: Streaming DiLoCo's fragments, runs of whole layers "
                               "(the embedding with the first, the head with the last), fragment f synced after the "
                               "steps t with t + 1 ≡ ⌊f·H/F⌋ (mod H), each with its own outer state: a sync carries "
                               "about 1/F of the model. With `delay_steps`, τ·F ≤ H (one exchange in flight at a time)",
                               "2", kLocal}),
                      &DataSyncConfig::fragments, 1),
       written_unless(integer("outer_gradient_bits", d, &DataSyncConfig::outer_gradient_bits, 1, 32,
                              {"`32`",
                               "1..8 or 32: DiLoCo's Δ on the wire. 1..8: each tensor's values in 2^bits bins over "
                               "mean ± 3σ (as `value_bits`), b-bit codes and a float32 table per tensor, the replicas' "
                               "messages all-gathered and g the mean of what they decode to, no error feedback "
                               "(Streaming DiLoCo's low-bit outer gradients: 4); 32: float32, all-reduced",
                               "4", kDiloco}),
                      &DataSyncConfig::outer_gradient_bits, 32),
       written_unless(number("deadline_seconds", d, &DataSyncConfig::deadline_seconds, Bounds::at_least(0),
                             {"none",
                              "partial participation: a round closes this many simulated seconds after its first "
                              "replica has finished its inner steps (or when `quorum` have, if that comes first); a "
                              "replica not finished by then is dropped from the round: it contributes nothing to the "
                              "average, its round is undone (weights, inner optimiser and codecs back to the round's "
                              "start) and it takes the merged weights like the others. The replay of the round's steps "
                              "decides who is late, so the same scenario on another network is another training. "
                              "Needs delay_steps 0 and one fragment",
                              "30", kDiloco, "seconds"}),
                      &DataSyncConfig::deadline_seconds, -1.0),
       written_unless(integer("quorum", d, &DataSyncConfig::quorum, 0, kMaxInt,
                              {"`0` (none)",
                               "partial participation: a round closes as soon as this many replicas (1..R) have "
                               "finished its inner steps (or at `deadline_seconds`, if that comes first); the others "
                               "are dropped from it as above",
                               "3", kDiloco}),
                      &DataSyncConfig::quorum, 0),
       tested_from(written_unless(boolean("eager", d, &DataSyncConfig::eager,
                                          {"`false`",
                                           "with `delay_steps` = H: the outer step of round k uses the average of "
                                           "round k − 1 with the replica's own share replaced by its round-k Δ, so "
                                           "its own work counts at once and the others' a round late (Kale et al. "
                                           "2025's eager update)",
                                           "true", kDiloco}),
                                  &DataSyncConfig::eager, false),
                   "", {"parallel.data_sync.delay_steps=30"}),
       h(number("outer_lr", d, &DataSyncConfig::outer_lr, Bounds::above(0),
                {"`0.7` (diloco), `1.0` (sparseloco)", "the outer learning rate (public runs: 0.6–1.0)", "0.5", kLocal})),
       h(number("outer_momentum", d, &DataSyncConfig::outer_momentum, Bounds::half_open(0, 1),
                {"`0.9`", "Nesterov momentum μ (m ← μm + g, θ ← θ_start − lr(g + μm))", "0.5", kDiloco})),
       h(integer("topk_per_chunk", d, &DataSyncConfig::topk_per_chunk, 1, kMaxInt,
                 {"`64`", "entries kept per chunk, at most `chunk` (64 of 4096 = 1.56 %)", "32", kSparse})),
       h(integer("chunk", d, &DataSyncConfig::chunk, 1, 4096,
                 {"`4096`",
                  "a square s²: 2-D tensors in s × s tiles (edge tiles smaller), 1-D tensors in runs of `chunk`; "
                  "indices within a chunk are 12 bits",
                  "1024", kSparse})),
       h(integer("value_bits", d, &DataSyncConfig::value_bits, 1, 32,
                 {"`2`",
                  "1..8 or 32: 2^bits bins over mean ± 3σ of a tensor's kept values, each sent as its bin's code with "
                  "a float32 table of the bin means per tensor; 32: float32 values, no quantisation",
                  "4", kSparse})),
       h(number("error_decay", d, &DataSyncConfig::error_decay, Bounds::closed(0, 1),
                {"`0.95`", "β of the error feedback", "0.5", kSparse})),
       h(choice("average", d, &DataSyncConfig::average, sparse_average_words(),
                {"`\"all\"`",
                 "each coordinate's sum of decoded values divided by the replica count (all) or by the number of "
                 "replicas that sent it (chosen; the DeMo/CCLoco reference code's scatter-mean)",
                 "\"chosen\"", kSparse})),
       h(choice("exchange", d, &DataSyncConfig::exchange, data_sync_exchange_words(),
                {"`\"all_gather\"`",
                 "how the replicas' messages meet (diloco's and all_reduce's are summed on the way, an all-reduce: "
                 "refused). all_gather: a ring all-gather between the ranks holding a part, each sending R − 1 "
                 "messages up its link. relay: through a relay (an object store): each rank uploads its message once "
                 "to the relay's node, which sends it on to the R − 1 other holders as soon as it has arrived (every "
                 "part's group through the one relay). Only the modelled traffic differs: the training's numbers are "
                 "bit for bit the all_gather's",
                 "\"relay\"", kSparse})),
       tested_from(h(integer("relay_node", d, &DataSyncConfig::relay_node, 0, kMaxInt,
                             {"`network.nodes` − 1",
                              "the relay's network node; no rank may run on it (so the network needs a node more than "
                              "the ranks). Its link is the topology's for that node: on a star give it a fat one with "
                              "an `overrides` entry (e.g. `{\"node\": 160, \"bandwidth\": \"100Gbps\"}`), on clusters a "
                              "cluster of its own",
                              "2", {"exchange", {"relay"}}})),
                   "", {"parallel.data_sync.method=sparseloco"})}};
}

}  // namespace lowband::fields
