// Field tables: compression and compression.boundary. Both are written from
// here; parse_compression and parse_boundary read them (`ratio`, the either-or
// of ratios and ranks, a required rank: checks across keys).
#include "runtime/scenario/fields_build.h"

namespace lowband::fields {

using namespace build;
using scenario_detail::kMaxInt;

namespace {

BoundaryConfig& boundary_of(Scenario& s) { return s.compression.boundary; }
CompressionConfig& compression_of(Scenario& s) { return s.compression; }
const At<CompressionConfig> kAt = compression_of;

const Applies kMos = {"method", {"mos"}};
const std::vector<std::string> kBothRatios = {"compression.k_ratio=0.5", "compression.v_ratio=0.5"};

// A mos key, tested from `from` with `sets` (mos needs a ratio or rank for K and for V).
Field mos(Field f, std::vector<std::string> sets, std::string from = "") {
  f.applies = kMos;
  return tested_from(hand_read(std::move(f)), std::move(from), std::move(sets));
}

// compression.owner_kv: for every codec that compresses.
Field owner_kv_field() {
  Field f = choice("owner_kv", kAt, &CompressionConfig::owner_kv,
                   owner_kv_words(),
                   {"`\"reconstructed\"` for mos, `\"exact\"` for topk and quantize",
                    "what the owner of a K/V block attends to: `reconstructed`, the reconstruction its receivers "
                    "decode, as the MoS paper constrains the K/V projections to the chunk's rotated subspace (every "
                    "rank attends to the same Ẑ; the owner's own gradient goes back through the codec too); or "
                    "`exact`, its exact K/V (only the wire is compressed; receivers attend to the codec's "
                    "reconstruction: lowband's wire-only variant of MoS). With method `none` or `drop`: no key",
                    "\"reconstructed\""});
  f.applies = {"method", {"topk", "mos", "quantize"}};  // (tested with the first, where it is not the default)
  // Always for mos (its runs from before the paper's constraint became the default
  // resolved to exact without the key: upgrade_recorded_scenario), else only where not
  // the default, so topk and quantize runs resolve as they did.
  f.written = [](const Scenario& s) {
    return s.compression.method == CompressionMethod::mos || s.compression.owner_kv != OwnerKv::exact;
  };
  return hand_read(std::move(f));
}

// compression.compress_final_layer: for every codec that compresses, always written
// there (a baseline's run recorded without it compressed every step and layer:
// upgrade_recorded_scenario).
Field compress_final_layer_field() {
  Field f = boolean("compress_final_layer", kAt, &CompressionConfig::compress_final_layer,
                    {"`false` for mos, `true` for topk, quantize and drop",
                     "false: the final transformer block's K/V and dK/dV cross uncompressed (identity bytes), every "
                     "earlier layer's compressed, as the MoS paper sets it up; true compresses every layer (mos: an "
                     "ablation, and what runs recorded without the key did)",
                     "true"});
  f.applies = {"method", {"mos", "topk", "quantize", "drop"}};
  return tested_from(hand_read(std::move(f)), "", kBothRatios);
}

// compression.fit_during_lr_warmup: an opt-in, written only where set (a run
// recorded before it existed gets it where it needed it: upgrade_recorded_scenario).
Field fit_during_lr_warmup_field() {
  Field f = mos(boolean("fit_during_lr_warmup", kAt, &CompressionConfig::fit_during_lr_warmup,
                        {"`false`",
                         "U₀ is fitted at the end of `warmup_steps`, which must then be at least "
                         "`training.lr_warmup_steps` (the paper fits it once the learning rate has warmed up; "
                         "`warmup_steps` 0 fits nothing); true allows fitting it during the learning-rate warm-up (an "
                         "ablation, and what runs recorded without the key may have done)",
                         "true"}),
                kBothRatios);
  f.written = [](const Scenario& s) { return s.compression.fit_during_lr_warmup; };
  return f;
}

// compression.rotation_params: written only where not 1, so the scenarios runs
// recorded before it existed resolve to the same text (a checkpoint compares it).
Field rotation_params_field() {
  Field f = mos(integer("rotation_params", kAt, &CompressionConfig::rotation_params, 1,
                        scenario_detail::kMaxRotationParams,
                        {"`1`",
                         "m, the rotation generators per key: θ ∈ ℝᵐ = Ψ·mean(chunk) + b (Ψ (m, head_dim)) and U(θ) = "
                         "U₀ + B·U₀ + ½B²·U₀ with B = Σⱼ θⱼAⱼ, m skew Aⱼ drawn from the seed; m θ values per head and "
                         "block on the wire (4·m bytes, and 4·m back where learned). 1 is the paper's single generator; "
                         "with rotation `fixed` only 1",
                         "2"}),
                kBothRatios);
  f.written = [](const Scenario& s) { return s.compression.rotation_params != 1; };
  return f;
}

// k_ratio and k_rank (v_*: the same): the resolved scenario holds the one given.
Field written_if(Field f, bool rank, int CompressionConfig::*rank_set) {
  f.written = [rank, rank_set](const Scenario& s) { return (s.compression.*rank_set > 0) == rank; };
  return f;
}

Field typed(Field f, std::string type) {
  f.type = std::move(type);
  return f;
}

}  // namespace

// How context-parallel ranks keep their weights together (compression.weight_sync and its keys).
std::vector<Field> weight_sync_fields() {
  return {
       hand_read(choice("weight_sync", kAt, &CompressionConfig::weight_sync,
                        weight_sync_words(),
                {"`\"all_reduce\"`",
                 "how weights stay equal across context-parallel ranks: `all_reduce` sums the gradients every step; "
                 "`sparse` (SPARTA-style) lets each rank step on its own gradient and averages a random slice of the "
                 "weights; the error-feedback variants keep every rank's weights bit-identical: each rank adds its "
                 "gradient share (`sparse_grad`, `topk_grad`) or its own AdamW update (`sparse_update`) to an error "
                 "buffer, the ranks exchange a sparse part of it (`sparse_grad`, `sparse_update`: a seeded random slice "
                 "shared by all ranks, all-reduced, values only; `topk_grad`: SparseLoCo's per-chunk top-k, 2-bit "
                 "values and 12-bit indices, all-gathered; `lowrank_grad`: PowerSGD's rank-r factors of each matrix, "
                 "two all-reduces, every coordinate served every step) and all apply the same aggregate. "
                 "Context-parallel ranks only, a context-only replica's or each pipeline stage's (docs/design.md §3, "
                 "§3b): other than `all_reduce`, an error with `parallel.context` 1 or with data-parallel replicas",
                 "\"sparse\""})),
       tested_from(hand_read(number("sync_fraction", kAt, &CompressionConfig::sync_fraction, Bounds{0, 1, true, false},
                {"`0.05`",
                 "`sparse`, `sparse_grad`, `sparse_update`: fraction of each tensor sent per sync (`parameters · "
                 "fraction · model.bytes_per_element` bytes all-reduced); `topk_grad`: entries kept per 4096-element "
                 "chunk, `k = max(1, round(fraction · 4096))`; `lowrank_grad`: rank `round(fraction · n·m / (n + m))` "
                 "of each n × m matrix (its factors hold about `fraction` of it; vectors sent whole)",
                 "0.1"})), "", {"compression.weight_sync=sparse"}),
       tested_from(hand_read(integer("sync_every", kAt, &CompressionConfig::sync_every, 1, kMaxInt,
                {"`1`", "`sparse`: steps between syncs; `all_reduce` and the error-feedback variants exchange every "
                 "step (only 1)", "2", {}, "steps"})), "", {"compression.weight_sync=sparse"}),
       typed(hand_read(integer("sync_value_bits", kAt, &CompressionConfig::sync_value_bits, 1, 32,
                {"`2`",
                 "bits per sent value (2^bits bins over ±3σ with a per-tensor table, as SparseLoCo), or 32 for float32 "
                 "values; an error with other weight syncs (they send none)",
                 "4", {"weight_sync", {"topk_grad"}}})), "1..8 or 32")};
}

// The baselines' keys: top-k sparsification and absmax block quantisation.
std::vector<Field> baseline_codec_fields() {
  return {
      hand_read(number("topk_fraction", kAt, &CompressionConfig::topk_fraction, Bounds{0, 1, true, false},
                {"`0.1`",
                 "fraction of each K/V block's entries kept (largest \\|z\\|); message k × (bytes_per_element + 4 "
                 "index bytes)",
                 "0.2", {"method", {"topk"}}})),
       typed(hand_read(integer("bits", kAt, &CompressionConfig::quantize_bits, 4, 8,
                               {"`4`", "bits per value", "8", {"method", {"quantize"}}})),
             "`4` \\| `8`"),
       hand_read(integer("block", kAt, &CompressionConfig::quantize_block, 1, kMaxInt,
                         {"`64`", "consecutive values sharing one absmax float32 scale", "32", {"method", {"quantize"}}}))};
}

Section compression_section() {
  const std::string ratio_doc =
      "fraction of each head's dimension removed; rank = round(head_dim × (1 − ratio)), at least 1";
  const std::string rank_doc =
      "the kept rank instead of a ratio (a ratio and a rank for the same tensor is an error; mos needs one "
      "of each)";
  Section c = {
      "compression",
      "`compression`",
      {},
      {hand_read(choice("method", kAt, &CompressionConfig::method,
                        compression_method_words(),
                {"`\"none\"`",
                 "K/V codec: mixtures of subspaces, or the baselines top-k sparsification and absmax block "
                 "quantisation (runtime/compress/), or `drop`: nothing sent, receivers attend to zeros (an "
                 "ablation, the floor of a K/V comparison); other than `none`, an error with `parallel.context` 1 "
                 "(no K/V is exchanged)",
                 "\"topk\""})),
       doc_only("ratio", Kind::number, "number in [0, 1)",
                {"—",
                 "one compression knob for every method (what `lowband sweep` varies): the nominal fraction of K/V "
                 "removed. mos: `k_ratio` = `v_ratio` = ratio (an error together with `k_ratio`, `v_ratio`, `k_rank`, "
                 "`v_rank`); topk: `topk_fraction` = 1 − ratio (an error together with `topk_fraction`; each kept "
                 "entry also carries 4 index bytes); quantize and none: only 0 is allowed. **Ratio 0 means "
                 "uncompressed whatever the method: the codec is the identity (method `none`)** and the method's own "
                 "keys are dropped. Resolved when loading: the resolved `scenario.json` holds the method's own keys, "
                 "never `ratio`. The bytes really sent are in `summary.json` (`kv_bytes_saved_fraction`)",
                 ""}),
       mos(written_if(number("k_ratio", kAt, &CompressionConfig::k_ratio, Bounds::half_open(0, 1), {"—", ratio_doc, "0.9"}),
                      false, &CompressionConfig::k_rank_set),
           {"compression.v_ratio=0.5"}, "0.5"),
       mos(written_if(number("v_ratio", kAt, &CompressionConfig::v_ratio, Bounds::half_open(0, 1), {"—", ratio_doc, "0.9"}),
                      false, &CompressionConfig::v_rank_set),
           {"compression.k_ratio=0.5"}, "0.5"),
       mos(typed(written_if(integer("k_rank", kAt, &CompressionConfig::k_rank_set, 1, kMaxInt, {"—", rank_doc, "8"}),
                            true, &CompressionConfig::k_rank_set),
                 "integer 1..head_dim"),
           {"compression.v_ratio=0.5"}, "4"),
       mos(typed(written_if(integer("v_rank", kAt, &CompressionConfig::v_rank_set, 1, kMaxInt, {"—", rank_doc, "8"}),
                            true, &CompressionConfig::v_rank_set),
                 "integer 1..head_dim"),
           {"compression.k_ratio=0.5"}, "4"),
       hand_read(integer("warmup_steps", kAt, &CompressionConfig::warmup_steps, 0, kMaxInt,
                         {"`500` for mos (and none, where it does nothing), `0` for topk, quantize and drop",
                          "uncompressed steps at the start of the run, the exact K/V and gradients crossing: mos then "
                          "fits U₀ from the last one's K/V (0 when `warm_start` is false); topk, quantize and drop "
                          "start compressing at this step (the same warm-up as MoS for a fair comparison)",
                          "10", {}, "steps"})),
       mos(choice("rotation", kAt, &CompressionConfig::rotation,
                  mos_rotation_words(),
           {"`\"learned\"`",
            "θ = ψ·mean(chunk) + b learned; θ = 0 (fixed U₀); or θ drawn per chunk, uniform in [−0.5, 0.5] (ablations)",
            "\"fixed\""}),
           kBothRatios),
       rotation_params_field(),
       mos(boolean("warm_start", kAt, &CompressionConfig::warm_start,
           {"`true`",
            "U₀ from the principal directions of the last warm-up step's K/V; false: random orthonormal U₀ and no "
            "warm-up",
            "false"}),
           {"compression.k_ratio=0.5", "compression.v_ratio=0.5", "compression.warmup_steps=0"}),
       mos(choice("k_frame", kAt, &CompressionConfig::k_frame, k_frame_words(),
           {"`\"pre_rope\"`",
            "K's subspace is taken before RoPE (the K projection's output, as the paper factorises it; receivers "
            "re-apply RoPE at the sender's positions) or after it. Measured on tinyshakespeare (4 layers, head_dim 64, "
            "100 steps): the best rank-5 subspace leaves 23–57 % relative error pre-RoPE but 87–89 % post-RoPE",
            "\"post_rope\""}),
           kBothRatios),
       compress_final_layer_field(),
       fit_during_lr_warmup_field(),
       owner_kv_field()}};
  for (Field& f : baseline_codec_fields()) c.fields.push_back(std::move(f));
  for (Field& f : weight_sync_fields()) c.fields.push_back(std::move(f));
  c.fields.push_back(doc_only("boundary", Kind::object, "object",
                              {"`{\"method\": \"none\"}`",
                               "what crosses a pipeline stage boundary (below); independent of `method`, which "
                               "compresses K/V",
                               ""}));
  return c;
}

Section boundary_section() {
  const At<BoundaryConfig> b = boundary_of;
  const auto h = [](Field f) { return f; };  // read generically; parse_boundary adds the checks across keys
  return {
      "compression.boundary",
      "`compression.boundary`",
      {"parallel.context=1", "parallel.pipeline=2", "training.batch_size=2"},
      {h(choice("method", b, &BoundaryConfig::method, boundary_method_words(),
                {"`\"none\"`",
                 "none: x itself, both ways. subspace: Uᵀ(x − E_fixed[token]) and the token id, rank + 1 values per "
                 "token forward, Uᵀ·∂L/∂x (rank values) back; exact, because every layer before the last boundary "
                 "keeps wo and w_down in span(U), the learnable embedding's rows too, and the first stage adds a frozen "
                 "full-rank table E_fixed (refused with `model.tie_embeddings` true: a tied LM head would be the "
                 "embedding on two stages). lowrank: Uᵀx and Uᵀ·∂L/∂x, rank values each way, without that constraint "
                 "(lossy). embedding_residual: Uᵀ(x − E[token]) and the token id, rank + 1 values per token forward, "
                 "Uᵀ·∂L/∂x back, where E is a snapshot of the learnable embedding (taken at the start and after each "
                 "outer step of `parallel.data_sync` diloco or sparseloco, sent by the first stage to the others, kind "
                 "`embed_snapshot`); no weight constraint, so what lies outside span(U) is lost (the arrangement of "
                 "public heterogeneous SparseLoCo code). topk: per token the `topk_fraction` largest \\|x\\| (values + int32 indices); the gradient "
                 "goes back at those indices only (values, no indices). quantize: per-token blocks of absmax "
                 "`bits`-bit codes with a float32 scale each; the gradient goes back uncompressed (straight-through)",
                 "\"topk\""})),
       tested_from(h(integer("rank", b, &BoundaryConfig::rank, 1, kMaxInt,
                             {"— (required)", "columns of the basis U, at most `model.d_model`", "9",
                              {"method", {"subspace", "lowrank", "embedding_residual"}}})),
                   "8"),
       h(number("topk_fraction", b, &BoundaryConfig::topk_fraction, Bounds{0, 1, true, false},
                {"`0.1`", "fraction of each token's values kept", "0.2", {"method", {"topk"}}})),
       h(integer("bits", b, &BoundaryConfig::quantize_bits, 4, 8,
                 {"`8`", "bits per value: 4 or 8", "4", {"method", {"quantize"}}})),
       h(integer("block", b, &BoundaryConfig::quantize_block, 1, kMaxInt,
                 {"`64`", "consecutive values sharing one absmax float32 scale", "32", {"method", {"quantize"}}}))}};
}

}  // namespace lowband::fields
