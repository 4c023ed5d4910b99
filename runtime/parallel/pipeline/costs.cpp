#include "runtime/parallel/pipeline/costs.h"

#include <string>

#include "common/error.h"
#include "runtime/compress/boundary_codec.h"
#include "runtime/compress/make_codec.h"
#include "runtime/scenario/layout_check.h"

namespace lowband::parallel {

PipelineCosts::PipelineCosts(const Scenario& s)
    : s_(s), stages_(s.parallel.pipeline), elem_(cost::dtype_bytes(s.devices.dtype)) {
  const auto& par = s.parallel;
  if (par.data != 1) throw InputError("parallel.data", "pipeline estimates model one replica (expected 1)");
  if (stages_ < 1) throw InputError("parallel.pipeline", "must be at least 1");
  check_layout(s);  // e.g. the first stage's embedding cannot also be the last stage's LM head
  if (par.microbatches < 1) throw InputError("parallel.microbatches", "must be at least 1");
  if (s.training.batch_size % par.microbatches != 0)
    throw InputError("parallel.microbatches", std::to_string(par.microbatches) + " microbatches do not divide " +
                                                  "training.batch_size " + std::to_string(s.training.batch_size));
  if (!par.stage_layers.empty() && int(par.stage_layers.size()) != stages_)
    throw InputError("parallel.stage_layers", std::to_string(par.stage_layers.size()) + " entries for " +
                                                  std::to_string(stages_) + " stages");
  int total = 0;
  for (int st = 0; st < stages_; ++st) total += layers(st);
  if (total != s.model.layers)
    throw InputError(par.stage_layers.empty() ? "parallel.pipeline" : "parallel.stage_layers",
                     "the stages hold " + std::to_string(total) + " layers, model.layers is " +
                         std::to_string(s.model.layers));
  sequences_ = s.training.batch_size / par.microbatches;
  const int64_t T = s.model.seq_len;
  pairs_ = double(sequences_) * cost::causal_pairs(0, T, 0, T);
  context_ranks_ = par.context;
  if (context_ranks_ < 1) throw InputError("parallel.context", "must be at least 1");
  if (context_ranks_ > 1) {  // as context parallelism alone (context/step_graph.cpp): every rank needs tokens
    const int64_t chunks = par.split == CpSplit::zigzag ? 2LL * context_ranks_ : context_ranks_;
    if (T < chunks)
      throw InputError("model.seq_len", "fewer tokens (" + std::to_string(T) + ") than the " +
                                            std::to_string(chunks) + " context-parallel chunks");
  }
  auto microbatch = std::make_shared<Scenario>(s);
  microbatch->training.batch_size = sequences_;
  microbatch_ = microbatch;
  context_ = std::make_shared<const ContextCosts>(*microbatch_);
}

int PipelineCosts::layers(int stage) const { return s_.parallel.stage_layer_count(stage, s_.model.layers); }

cost::Cost PipelineCosts::forward(int stage) const {
  const auto& m = s_.model;
  const double n = double(microbatch_rows());
  const cost::Cost layer = cost::pre_attention_forward(m, n, elem_) + cost::attention_forward(m, pairs_, n, n, elem_) +
                           cost::post_attention_forward(m, n, elem_);
  cost::Cost c = layer * double(layers(stage));
  if (stage == 0) c += cost::embedding_forward(m, n, elem_);
  if (stage == stages_ - 1) c += cost::head_forward(m, n, elem_);
  return c;
}

cost::Cost PipelineCosts::backward(int stage) const {
  const auto& m = s_.model;
  const double n = double(microbatch_rows());
  const cost::Cost dense = cost::pre_attention_forward(m, n, elem_) + cost::post_attention_forward(m, n, elem_);
  const cost::Cost layer = cost::dense_backward(dense) + cost::attention_backward(m, pairs_, n, n, elem_);
  cost::Cost c = layer * double(layers(stage));
  if (stage == 0) c += cost::dense_backward(cost::embedding_forward(m, n, elem_));
  if (stage == stages_ - 1) c += cost::dense_backward(cost::head_forward(m, n, elem_));
  return c;
}

double PipelineCosts::parameters(int stage) const {
  double p = layers(stage) * cost::layer_parameters(s_.model);
  if (stage == 0) p += cost::embedding_parameters(s_.model);
  if (stage == stages_ - 1) p += cost::head_parameters(s_.model);
  return p;
}

cost::Cost PipelineCosts::optimizer(int stage) const { return cost::adamw_step(parameters(stage)); }

double PipelineCosts::seconds(int stage, const cost::Cost& c, const char* tag) const {
  return rank_seconds(stage * context_ranks_, c, tag);
}

double PipelineCosts::rank_seconds(int rank, const cost::Cost& c, const char* tag) const {
  return cost::node_seconds(s_, s_.parallel.node_of(rank), c, tag);
}

PipelineStep pipeline_step_figures(const Scenario& s) {
  const PipelineCosts costs(s);  // validates the pipeline keys first
  const int P = costs.stages(), C = costs.context_ranks(), M = s.parallel.microbatches;
  const int64_t n = costs.microbatch_rows();
  const auto codec = compress::make_boundary_codec(s);
  PipelineStep out;
  out.tokens = double(s.training.batch_size) * double(s.model.seq_len);
  out.context_ranks = C;
  out.message_bytes = codec->message_bytes(n);
  out.gradient_bytes = codec->gradient_bytes(n);
  out.boundary_codec = codec->describe();
  out.uncompressed_boundary_bytes = 2.0 * M * double(n) * s.model.d_model * s.model.bytes_per_element;
  double forward_flops = 0;
  for (int st = 0; st < P; ++st) forward_flops += M * costs.forward(st).flops;
  out.model_flops = 3.0 * forward_flops;  // the model's: the same however a stage's ranks split it
  if (C > 1) {
    out.uncompressed_kv_bytes = costs.context().uncompressed_kv_bytes() * M;  // per microbatch, M of them
    out.kv_codec = compress::make_kv_codec(s)->describe();
  }
  return out;
}

}  // namespace lowband::parallel
