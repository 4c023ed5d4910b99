// ContextTrainer checkpoints (see context_trainer.h): the state between two steps.
// Version 2: per rank one blob (parameters, AdamW state, codec state and the
// codec's moments, and the weight sync's error buffer where it keeps one), a rank
// whose blob equals rank 0's written as a reference to it. Version 1 (one codec shared by all ranks) is still read.
#include <cstring>
#include <istream>
#include <ostream>
#include <sstream>
#include <string>

#include "common/binary_io.h"
#include "runtime/parallel/context_trainer.h"

namespace lowband::parallel {
namespace {

constexpr uint64_t kTrainerStateTagV1 = 0x6374782d73746174ULL;  // "ctx-stat"
constexpr uint64_t kTrainerStateTag = 0x6374782d73746132ULL;    // "ctx-sta2"

void load_params(const kernels::Backend& k, model::Model& m, std::istream& in) {
  std::vector<float> host(size_t(m.param_count()));
  binary::read_array_into(in, host.data(), uint64_t(host.size()), "a replica's parameters");
  k.upload(m.params(), host.data(), host.size() * sizeof(float));
}

}  // namespace

std::string ContextTrainer::rank_state(const ContextRank& r) const {
  std::ostringstream out;
  const std::vector<float> p = r.model().params_to_host();  // host copies: any backend
  binary::write_array(out, p.data(), uint64_t(p.size()));
  r.optimizer().save_state(out);
  r.attention().save_codec_state(out);
  if (r.sync().error_feedback()) r.sync().save_state(out);
  return out.str();
}

void ContextTrainer::save_state(std::ostream& out) const {
  const std::vector<std::string> blobs = world_.gather([&](int r) { return rank_state(*local_rank(r)); });
  binary::write_u64(out, kTrainerStateTag);
  binary::write_i64(out, P_);
  binary::write_i64(out, param_count_);
  binary::write_string(out, codec_name_);
  for (int r = 0; r < P_; ++r) {
    const bool same = r > 0 && blobs[size_t(r)] == blobs[0];
    binary::write_bool(out, same);
    if (!same) binary::write_string(out, blobs[size_t(r)]);
  }
}

void ContextTrainer::load_state(std::istream& in) {
  const uint64_t tag = binary::read_u64(in, "the trainer state");
  if (tag != kTrainerStateTag && tag != kTrainerStateTagV1)
    throw binary::BinaryFormatError("no trainer state where one was expected");
  const int64_t ranks = binary::read_i64(in, "the rank count");
  if (ranks != P_)
    throw binary::BinaryFormatError("a state of " + std::to_string(ranks) + " ranks, the trainer has " +
                                    std::to_string(P_));
  const int64_t count = binary::read_i64(in, "the parameter count");
  if (count != param_count_)
    throw binary::BinaryFormatError("models of " + std::to_string(count) + " parameters, the scenario's have " +
                                    std::to_string(param_count_));
  const std::string codec = binary::read_string(in, "the codec's name");
  if (codec != codec_name_)
    throw binary::BinaryFormatError("codec \"" + codec + "\", the scenario's is \"" + codec_name_ + "\"");
  if (tag == kTrainerStateTagV1) return load_state_v1(in);
  std::string blob0;
  for (int r = 0; r < P_; ++r) {
    std::string blob;
    if (binary::read_bool(in, "a rank's flag")) {
      if (r == 0) throw binary::BinaryFormatError("rank 0's state refers to itself");
      blob = blob0;
    } else {
      blob = binary::read_string(in, "a rank's state");
    }
    if (r == 0) blob0 = blob;
    ContextRank* mine = local_rank(r);
    if (!mine) continue;  // another process's rank (MPI)
    std::istringstream one(blob);
    load_params(*k_, mine->model(), one);
    mine->optimizer().load_state(one);
    mine->attention().load_codec_state(one);
    if (mine->sync().error_feedback()) mine->sync().load_state(one, param_count_);
  }
}

// Version 1: all parameters, then all optimisers (each may refer to rank 0's),
// then one codec state that every rank starts from.
void ContextTrainer::load_state_v1(std::istream& in) {
  std::vector<std::string> params(static_cast<size_t>(P_)), optimizers(static_cast<size_t>(P_));
  const uint64_t count = uint64_t(param_count_);
  for (int r = 0; r < P_; ++r) {
    if (binary::read_bool(in, "a replica's flag")) {
      if (r == 0) throw binary::BinaryFormatError("rank 0's parameters refer to themselves");
      params[size_t(r)] = params[0];
    } else {
      std::vector<float> host(count);
      binary::read_array_into(in, host.data(), count, "a replica's parameters");
      std::ostringstream o;
      binary::write_array(o, host.data(), count);
      params[size_t(r)] = o.str();
    }
  }
  for (int r = 0; r < P_; ++r) {
    if (binary::read_bool(in, "an optimiser's flag")) {
      if (r == 0) throw binary::BinaryFormatError("rank 0's optimiser refers to itself");
      optimizers[size_t(r)] = optimizers[0];
    } else {
      optim::AdamW scratch(model::ParamLayout(scenario_.model), optim::optimizer_config_from(scenario_.training),
                           kernels::Device::cpu);
      scratch.load_state(in);
      std::ostringstream o;
      scratch.save_state(o);
      optimizers[size_t(r)] = o.str();
    }
  }
  std::ostringstream rest;
  rest << in.rdbuf();
  const std::string codec = rest.str();
  for (int r = 0; r < P_; ++r) {
    ContextRank* mine = local_rank(r);
    if (!mine) continue;
    std::istringstream p(params[size_t(r)]), o(optimizers[size_t(r)]), c(codec);
    load_params(*k_, mine->model(), p);
    mine->optimizer().load_state(o);
    mine->attention().load_codec_state(c);
  }
}

}  // namespace lowband::parallel
