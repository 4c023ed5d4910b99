// Field tables: the top level, model, training and projection.
#include "runtime/scenario/fields_build.h"

namespace lowband::fields {

using namespace build;
using scenario_detail::kMaxInt;

namespace {

ModelConfig& model_of(Scenario& s) { return s.model; }
TrainingConfig& training_of(Scenario& s) { return s.training; }

constexpr int64_t kMaxSeqLen = int64_t{1} << 40;

}  // namespace

Section top_level_section() {
  const auto object = [](const std::string& key, const std::string& default_text, const std::string& doc) {
    return doc_only(key, Kind::object, "object", {default_text, doc, ""});
  };
  return {"",
          "top level",
          {},
          {doc_only("name", Kind::string, "string of letters, digits, `-` `_` `.`",
                    {"**required**", "names run directories", "\"renamed\""}),
           doc_only("description", Kind::string, "string", {"`\"\"`", "what the scenario shows", "\"changed\""}),
           object("model", "**required**", ""),
           object("parallel", "all defaults", ""),
           object("compression", "`{\"method\": \"none\"}`", ""),
           object("network", "**required**", ""),
           object("devices", "`{\"profile\": \"cpu\", \"dtype\": \"bf16\"}`", ""),
           object("training", "all defaults", ""),
           object("sweep", "—",
                  "only for `lowband sweep` and `lowband estimate` (see the main README's Sweeps): "
                  "`{\"dotted.key\": [value, ...]}`, one axis per key, in file order; `lowband run` and `validate` "
                  "refuse a file that has one"),
           object("projection", "none", "projected timing (below)")}};
}

Section model_section() {
  const At<ModelConfig> m = model_of;
  return {"model",
          "`model` (Llama-style decoder)",
          {},
          {integer("layers", m, &ModelConfig::layers, 1, kMaxInt, {"**required**", "", "2"}),
           integer("d_model", m, &ModelConfig::d_model, 1, kMaxInt, {"**required**", "divisible by `heads`", "512"}),
           integer("heads", m, &ModelConfig::heads, 1, kMaxInt, {"**required**", "head_dim = d_model / heads", "8"}),
           integer("kv_heads", m, &ModelConfig::kv_heads, 1, kMaxInt,
                   {"`heads`", "`heads` divisible by it (grouped-query attention when smaller)", "2"}),
           integer("ffn_hidden", m, &ModelConfig::ffn_hidden, 1, kMaxInt, {"**required**", "SwiGLU hidden size", "512"}),
           integer("vocab", m, &ModelConfig::vocab, 1, kMaxInt,
                   {"**required**", "≥ 256 with tokenizer `byte`, ≥ 50257 with `gpt2`", "300"}),
           integer("seq_len", m, &ModelConfig::seq_len, 1, kMaxSeqLen,
                   {"**required**", "tokens per sequence; divisible by `context` (×2 with the zigzag split)", "512",
                    {}, "tokens"}),
           integer("bytes_per_element", m, &ModelConfig::bytes_per_element, 1, 8,
                   {"`2`", "of activations and gradients on the wire", "4", {}, "bytes"}),
           boolean("tie_embeddings", m, &ModelConfig::tie_embeddings, {"`false`", "LM head shares the embedding", "true"})}};
}

Section training_section() {
  const At<TrainingConfig> t = training_of;
  Field seed = doc_only("seed", Kind::integer, "integer ≥ 0 (64-bit)", {"`1`", "", "7"});
  seed.lo = 0, seed.hi = 18446744073709551615.0;
  seed.read = [](const scenario_detail::ObjectReader& r, Scenario& s) {
    if (r.has("seed")) s.training.seed = scenario_detail::as_uint64(r.need("seed"), r.path_of("seed"));
  };
  seed.write = [](const Scenario& s) { return json(s.training.seed); };
  Field data = doc_only("data", Kind::string, "string",
                        {"`\"\"`", "text or `.u16` token file; `\"\"` = the built-in corpus", "\"data/tinyshakespeare.txt\""});
  data.read = [](const scenario_detail::ObjectReader& r, Scenario& s) { s.training.data = r.string_or("data", s.training.data); };
  data.write = [](const Scenario& s) { return json(s.training.data); };
  // Old scenarios' resolved JSON (checkpoint fixtures) has no data_source: written only when not "file".
  Field data_source = word("data_source", t, &TrainingConfig::data_source, {"file", "recall"},
                           {"`\"file\"`",
                            "`\"file\"`: `data`; `\"recall\"`: generated keyed-recall sequences whose answer tokens only "
                            "another context rank's K/V carry (runtime/data/recall.h; `data` must be `\"\"`, tokenizer "
                            "`byte`); evaluations then add `val_answer_*` to steps.jsonl",
                            "\"recall\""});
  data_source.written = [](const Scenario& s) { return s.training.data_source != "file"; };
  const Applies recall{"data_source", {"recall"}};
  // Not for data_source "recall" (it validates on a stream of its own): refused there, and not written.
  Field validation_fraction =
      number("validation_fraction", t, &TrainingConfig::validation_fraction, Bounds::half_open(0, 1),
             {"`0.1`",
              "the last fraction of the token stream, held out for the validation loss (data_source \"file\" only; "
              "0 with `eval_every` > 0 is refused: nothing to evaluate on)",
              "0.2"});
  validation_fraction.written = [](const Scenario& s) { return s.training.data_source != "recall"; };
  const auto text_form = [](Field f) {  // key and value lengths other than 1 need the text form
    f.example_sets = {"training.recall_form=text"};
    return f;
  };
  return {
      "training",
      "`training`",
      {"model.vocab=50257"},  // tokenizer gpt2 needs it
      {integer("steps", t, &TrainingConfig::steps, 1, kMaxInt, {"`100`", "optimiser steps", "3"}),
       integer("batch_size", t, &TrainingConfig::batch_size, 1, kMaxInt, {"`1`", "sequences per step", "2", {}, "sequences"}),
       number("lr", t, &TrainingConfig::lr, Bounds::above(0), {"`3e-4`", "peak learning rate", "0.02"}),
       integer("lr_warmup_steps", t, &TrainingConfig::lr_warmup_steps, 0, kMaxInt, {"`0`", "linear warm-up", "5", {}, "steps"}),
       number("weight_decay", t, &TrainingConfig::weight_decay, Bounds::at_least(0), {"`0.01`", "AdamW", "0.1"}),
       number("grad_clip", t, &TrainingConfig::grad_clip, Bounds::at_least(0), {"`1.0`", "global norm (0: off)", "0.5"}),
       seed,
       data,
       word("tokenizer", t, &TrainingConfig::tokenizer, {"byte", "gpt2"}, {"`\"byte\"`", "", "\"gpt2\""}),
       data_source,
       integer("recall_pairs", t, &TrainingConfig::recall_pairs, 0, kMaxInt,
               {"`0`",
                "key→value pairs per sequence, all in the first context rank's first block; queries of random keys "
                "fill the rest; 0: as many as fit (12 keys fused, 52^key_tokens as text)",
                "8", recall, "pairs"}),
       word("recall_form", t, &TrainingConfig::recall_form, {"fused", "text"},
            {"`\"fused\"`",
             "a pair as one byte 128 + key·10 + value (keys a..l: one attention hop answers a query, learnt in a few "
             "hundred steps) or as its letters and digits (`text`: an induction head's two hops; key and value "
             "tokens only here); queries are always text",
             "\"text\"", recall}),
       text_form(integer("recall_key_tokens", t, &TrainingConfig::recall_key_tokens, 1, 8,
                         {"`1`", "letters per key (52 choices each)", "2", recall, "tokens"})),
       text_form(integer("recall_value_tokens", t, &TrainingConfig::recall_value_tokens, 1, 8,
                         {"`1`", "digits per value: the answer tokens (chance 1/10 each)", "2", recall, "tokens"})),
       integer("eval_every", t, &TrainingConfig::eval_every, 0, kMaxInt,
               {"`0`", "steps between evaluations (0: never)", "10", {}, "steps"}),
       validation_fraction,
       integer("eval_batches", t, &TrainingConfig::eval_batches, 1, kMaxInt,
               {"`4`", "validation batches (of `batch_size` sequences) per evaluation", "2"}),
       integer("checkpoint_every", t, &TrainingConfig::checkpoint_every, 0, kMaxInt,
               {"`100`",
                "steps between `lowband run` checkpoints (`RUN_DIR/checkpoint.bin`, for `lowband run --resume`); 0: "
                "never. A finished run always leaves one, marked complete, unless 0. With partial participation "
                "(`parallel.data_sync.deadline_seconds`, `quorum`) a multiple of `inner_steps`, the default "
                "raised to the next one",
                "25", {}, "steps"}),
       word("backend", t, &TrainingConfig::backend, {"cpu", "cuda"},
            {"`\"cpu\"`",
             "which kernels train the real model: the CPU's, or an NVIDIA GPU's (CUDA + cuBLAS, every rank's replica "
             "on the one GPU). `\"cuda\"` where no GPU can be used is an error naming this key. The simulated devices "
             "(`devices`) are separate: `devices.timing` `\"auto\"` then takes the profile's seconds, and "
             "`\"measured\"` the GPU's own",
             "\"cuda\""})}};
}

Section projection_section() {
  return {"projection",
          "`projection` (projected timing)",
          {},
          {doc_only("scenario", Kind::object, "built-in name \\| scenario object",
                    {"**required**", "the larger scenario whose step time the run takes",
                     "\"mos-paper-centralized-100gbps\""})}};
}

}  // namespace lowband::fields
