#include "runtime/parallel/trainer.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "common/error.h"
#include "runtime/compress/boundary_codec.h"
#include "runtime/compress/make_codec.h"
#include "runtime/parallel/context/costs.h"
#include "runtime/parallel/layout_trainer.h"

namespace lowband::parallel {

const kernels::Backend& training_backend(const TrainingConfig& t) {
  try {
    return kernels::backend(t.backend == "cuda" ? kernels::Device::cuda : kernels::Device::cpu);
  } catch (const std::runtime_error& e) {
    throw InputError("training.backend", std::string("\"") + t.backend + "\": " + e.what());
  }
}

double CompressedTraffic::sent(const sim::StepGraph& graph) const {
  double bytes = 0;
  for (int r = 0; r < graph.ranks(); ++r)
    for (const std::string& kind : kinds) bytes += graph.bytes_sent(r, kind);
  return bytes;
}

Trainer::ClosedRound Trainer::close_round(int step, const std::vector<bool>& made_it) {
  (void)made_it;
  throw std::logic_error("Trainer::close_round: step " + std::to_string(step) + " closes no round");
}

StepRecord close_step_record(RankWorld& world, const Scenario& scenario, int step, const RankStepResult& mine,
                             double kernel_wall_seconds, bool record, bool keep_open) {
  StepRecord rec;
  rec.step = step;
  rec.loss = mine.loss, rec.lr = mine.lr, rec.grad_norm = mine.grad_norm, rec.weight_sync = mine.weight_sync;
  rec.kv_reconstruction_error_k = mine.kv_reconstruction_error_k;
  rec.kv_reconstruction_error_v = mine.kv_reconstruction_error_v;
  RankWorld::StepBooks books = world.close_step(scenario, kernel_wall_seconds, record, keep_open);
  rec.window_open = record && keep_open;
  rec.kernel_wall_seconds = books.kernel_wall_seconds, rec.record_wall_seconds = books.record_wall_seconds;
  rec.graph = std::move(books.graph);
  return rec;
}

CompressedTraffic compressed_traffic_of(const Scenario& s) {
  const ModelConfig& m = s.model;
  const int P = s.parallel.pipeline, C = s.parallel.context;
  auto uncompressed_kv = [](Scenario whole) {  // the K/V exchange of one replica of the whole model
    whole.parallel.pipeline = 1, whole.parallel.microbatches = 1, whole.parallel.stage_layers.clear();
    whole.parallel.data = 1, whole.parallel.replicas.clear(), whole.parallel.placement.clear();
    return ContextCosts(whole).uncompressed_kv_bytes();
  };
  CompressedTraffic t;
  const std::string kv_codec = compress::make_kv_codec(s)->describe();
  const double kv = C > 1 || P == 1 ? uncompressed_kv(s) : 0.0;  // stages of one rank exchange no K/V
  if (C > 1) t.uncompressed_kv_bytes = kv, t.kv_codec = kv_codec;
  if (P == 1) {
    t.name = "kv", t.kinds = {"kv", "dkv"}, t.codec = kv_codec;
    t.uncompressed_bytes_per_step = kv;
    return t;
  }
  // Each of the P - 1 boundaries carries every microbatch's rows once each way.
  t.uncompressed_boundary_bytes =
      2.0 * (P - 1) * double(s.training.batch_size) * double(m.seq_len) * m.d_model * m.bytes_per_element;
  t.boundary_codec = compress::make_boundary_codec(s)->describe();
  t.uncompressed_bytes_per_step = t.uncompressed_boundary_bytes + t.uncompressed_kv_bytes;
  if (C == 1) {
    t.name = "boundary", t.kinds = {"act", "act_grad"}, t.codec = t.boundary_codec;
    return t;
  }
  // With context ranks inside: both codecs' messages, measured together.
  t.name = "exchange", t.kinds = {"kv", "dkv", "act", "act_grad"};
  t.codec = "K/V: " + kv_codec + "; boundary: " + t.boundary_codec;
  return t;
}

std::unique_ptr<Trainer> make_trainer(const Scenario& scenario, ComputeTiming timing, comm::Communicator* comm) {
  return std::make_unique<LayoutTrainer>(scenario, timing, comm);
}

}  // namespace lowband::parallel
