// Field tables: compression (read and written by parse_compression and
// compression_json: `ratio` and the either-or of ratios and ranks) and
// compression.boundary (written from here).
#include "runtime/scenario/fields_build.h"

namespace lowband::fields {

using namespace build;
using scenario_detail::kMaxInt;

namespace {

BoundaryConfig& boundary_of(Scenario& s) { return s.compression.boundary; }

const Applies kMos = {"method", {"mos"}};
const std::vector<std::string> kBothRatios = {"compression.k_ratio=0.5", "compression.v_ratio=0.5"};

Field mos(std::string key, Kind kind, std::string type, Doc d, std::vector<std::string> sets,
          std::string from = "") {
  d.applies = kMos;
  return tested_from(doc_only(std::move(key), kind, std::move(type), std::move(d)), std::move(from), std::move(sets));
}

}  // namespace

// How context-parallel ranks keep their weights together (compression.weight_sync and its keys).
std::vector<Field> weight_sync_fields() {
  return {
       doc_choice("weight_sync", {"all_reduce", "sparse", "sparse_grad", "topk_grad", "sparse_update", "lowrank_grad"},
                {"`\"all_reduce\"`",
                 "how weights stay equal across context-parallel ranks: `all_reduce` sums the gradients every step; "
                 "`sparse` (SPARTA-style) lets each rank step on its own gradient and averages a random slice of the "
                 "weights; the error-feedback variants keep every rank's weights bit-identical: each rank adds its "
                 "gradient share (`sparse_grad`, `topk_grad`) or its own AdamW update (`sparse_update`) to an error "
                 "buffer, the ranks exchange a sparse part of it (`sparse_grad`, `sparse_update`: a seeded random slice "
                 "shared by all ranks, all-reduced, values only; `topk_grad`: SparseLoCo's per-chunk top-k, 2-bit "
                 "values and 12-bit indices, all-gathered; `lowrank_grad`: PowerSGD's rank-r factors of each matrix, "
                 "two all-reduces, every coordinate served every step) and all apply the same aggregate. "
                 "Context-parallel ranks only (docs/design.md §3)",
                 "\"sparse\""}),
       doc_only("sync_fraction", Kind::number, "number in (0, 1]",
                {"`0.05`",
                 "`sparse`, `sparse_grad`, `sparse_update`: fraction of each tensor sent per sync (`parameters · "
                 "fraction · model.bytes_per_element` bytes all-reduced); `topk_grad`: entries kept per 4096-element "
                 "chunk, `k = max(1, round(fraction · 4096))`; `lowrank_grad`: rank `round(fraction · n·m / (n + m))` "
                 "of each n × m matrix (its factors hold about `fraction` of it; vectors sent whole)",
                 "0.1"}),
       doc_only("sync_every", Kind::integer, "integer ≥ 1",
                {"`1`", "`sparse`: steps between syncs; the error-feedback variants exchange every step (only 1)", "2",
                 {}, "steps"}),
       doc_only("sync_value_bits", Kind::integer, "1..8 or 32",
                {"`2`",
                 "bits per sent value (2^bits bins over ±3σ with a per-tensor table, as SparseLoCo), or 32 for float32 "
                 "values; read with other weight syncs but not used (nor recorded)",
                 "4", {"weight_sync", {"topk_grad"}}})};
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
      {doc_choice("method", {"none", "mos", "topk", "quantize"},
                {"`\"none\"`",
                 "K/V codec: mixtures of subspaces, or the baselines top-k sparsification and absmax block "
                 "quantisation (runtime/compress/)",
                 "\"topk\""}),
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
       mos("k_ratio", Kind::number, "number in [0, 1)", {"—", ratio_doc, "0.9"}, {"compression.v_ratio=0.5"}, "0.5"),
       mos("v_ratio", Kind::number, "number in [0, 1)", {"—", ratio_doc, "0.9"}, {"compression.k_ratio=0.5"}, "0.5"),
       mos("k_rank", Kind::integer, "integer 1..head_dim", {"—", rank_doc, "8"}, {"compression.v_ratio=0.5"}, "4"),
       mos("v_rank", Kind::integer, "integer 1..head_dim", {"—", rank_doc, "8"}, {"compression.k_ratio=0.5"}, "4"),
       doc_only("warmup_steps", Kind::integer, "integer ≥ 0",
                {"`500`", "uncompressed steps before U₀ is taken (0 when `warm_start` is false)", "10", {}, "steps"}),
       with_choices(mos("rotation", Kind::choice, choice_type({"learned", "fixed", "random"}),
           {"`\"learned\"`",
            "θ = ψ·mean(chunk) + b learned; θ = 0 (fixed U₀); or θ drawn per chunk, uniform in [−0.5, 0.5] (ablations)",
            "\"fixed\""},
           kBothRatios), {"learned", "fixed", "random"}),
       mos("warm_start", Kind::boolean, "bool",
           {"`true`",
            "U₀ from the principal directions of the last warm-up step's K/V; false: random orthonormal U₀ and no "
            "warm-up",
            "false"},
           {"compression.k_ratio=0.5", "compression.v_ratio=0.5", "compression.warmup_steps=0"}),
       with_choices(mos("k_frame", Kind::choice, choice_type({"pre_rope", "post_rope"}),
           {"`\"pre_rope\"`",
            "K's subspace is taken before RoPE (the K projection's output, as the paper factorises it; receivers "
            "re-apply RoPE at the sender's positions) or after it. Measured on tinyshakespeare (4 layers, head_dim 64, "
            "100 steps): the best rank-5 subspace leaves 23–57 % relative error pre-RoPE but 87–89 % post-RoPE",
            "\"post_rope\""},
           kBothRatios), {"pre_rope", "post_rope"}),
       doc_only("topk_fraction", Kind::number, "number in (0, 1]",
                {"`0.1`",
                 "fraction of each K/V block's entries kept (largest \\|z\\|); message k × (bytes_per_element + 4 "
                 "index bytes)",
                 "0.2", {"method", {"topk"}}}),
       doc_only("bits", Kind::integer, "`4` \\| `8`", {"`4`", "bits per value", "8", {"method", {"quantize"}}}),
       doc_only("block", Kind::integer, "integer ≥ 1",
                {"`64`", "consecutive values sharing one absmax float32 scale", "32", {"method", {"quantize"}}})}};
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
  // Read by parse_boundary (rank is required with subspace and lowrank); written from here.
  const auto h = [](Field f) { return hand_read(std::move(f)); };
  return {
      "compression.boundary",
      "`compression.boundary`",
      {"parallel.context=1", "parallel.pipeline=2", "training.batch_size=2"},
      {h(choice("method", b, &BoundaryConfig::method,
                {{"none", BoundaryMethod::none}, {"subspace", BoundaryMethod::subspace},
                 {"lowrank", BoundaryMethod::lowrank}, {"topk", BoundaryMethod::topk},
                 {"quantize", BoundaryMethod::quantize}},
                {"`\"none\"`",
                 "none: x itself, both ways. subspace: Uᵀ(x − E_fixed[token]) and the token id, rank + 1 values per "
                 "token forward, Uᵀ·∂L/∂x (rank values) back; exact, because every layer before the last boundary "
                 "keeps wo and w_down in span(U), the learnable embedding's rows too, and the first stage adds a frozen "
                 "full-rank table E_fixed (refused with `model.tie_embeddings` true: a tied LM head would be the "
                 "embedding on two stages). lowrank: Uᵀx and Uᵀ·∂L/∂x, rank values each way, without that constraint "
                 "(lossy). topk: per token the `topk_fraction` largest \\|x\\| (values + int32 indices); the gradient "
                 "goes back at those indices only (values, no indices). quantize: per-token blocks of absmax "
                 "`bits`-bit codes with a float32 scale each; the gradient goes back uncompressed (straight-through)",
                 "\"topk\""})),
       tested_from(h(integer("rank", b, &BoundaryConfig::rank, 1, kMaxInt,
                             {"— (required)", "columns of the basis U, at most `model.d_model`", "9",
                              {"method", {"subspace", "lowrank"}}})),
                   "8"),
       h(number("topk_fraction", b, &BoundaryConfig::topk_fraction, Bounds{0, 1, true, false},
                {"`0.1`", "fraction of each token's values kept", "0.2", {"method", {"topk"}}})),
       h(integer("bits", b, &BoundaryConfig::quantize_bits, 4, 8,
                 {"`8`", "bits per value: 4 or 8", "4", {"method", {"quantize"}}})),
       h(integer("block", b, &BoundaryConfig::quantize_block, 1, kMaxInt,
                 {"`64`", "consecutive values sharing one absmax float32 scale", "32", {"method", {"quantize"}}}))}};
}

}  // namespace lowband::fields
