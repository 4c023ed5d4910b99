// ContextTrainer checkpoints (see context_trainer.h): the state between two steps.
#include <cstring>
#include <istream>
#include <ostream>
#include <string>

#include "common/binary_io.h"
#include "runtime/parallel/context_trainer.h"

namespace lowband::parallel {
namespace {

constexpr uint64_t kTrainerStateTag = 0x6374782d73746174ULL;  // "ctx-stat"

}  // namespace

void ContextTrainer::save_state(std::ostream& out) const {
  binary::write_u64(out, kTrainerStateTag);
  binary::write_i64(out, P_);
  const int64_t count = models_[0].param_count();
  binary::write_i64(out, count);
  binary::write_string(out, codec_->describe());
  const std::vector<float> p0 = models_[0].params_to_host();  // host copies: any backend
  for (int r = 0; r < P_; ++r) {
    const std::vector<float> p = r == 0 ? p0 : models_[size_t(r)].params_to_host();
    const bool same = r > 0 && std::memcmp(p.data(), p0.data(), size_t(count) * sizeof(float)) == 0;
    binary::write_bool(out, same);
    if (!same) binary::write_array(out, p.data(), uint64_t(count));
  }
  for (int r = 0; r < P_; ++r) {
    const bool same = r > 0 && optimizers_[size_t(r)].same_state(optimizers_[0]);
    binary::write_bool(out, same);
    if (!same) optimizers_[size_t(r)].save_state(out);
  }
  codec_->save_state(out);
  binary::write_vector(out, codec_m_);
  binary::write_vector(out, codec_v_);
  binary::write_i64(out, codec_steps_);
}

void ContextTrainer::load_state(std::istream& in) {
  if (binary::read_u64(in, "the trainer state") != kTrainerStateTag)
    throw binary::BinaryFormatError("no trainer state where one was expected");
  const int64_t ranks = binary::read_i64(in, "the rank count");
  if (ranks != P_)
    throw binary::BinaryFormatError("a state of " + std::to_string(ranks) + " ranks, the trainer has " +
                                    std::to_string(P_));
  const int64_t count = binary::read_i64(in, "the parameter count");
  if (count != models_[0].param_count())
    throw binary::BinaryFormatError("models of " + std::to_string(count) + " parameters, the scenario's have " +
                                    std::to_string(models_[0].param_count()));
  const std::string codec = binary::read_string(in, "the codec's name");
  if (codec != codec_->describe())
    throw binary::BinaryFormatError("codec \"" + codec + "\", the scenario's is \"" + codec_->describe() + "\"");
  const size_t bytes = size_t(count) * sizeof(float);
  std::vector<float> host(static_cast<size_t>(count));
  for (int r = 0; r < P_; ++r) {
    float* p = models_[size_t(r)].params();
    if (binary::read_bool(in, "a replica's flag")) {
      if (r == 0) throw binary::BinaryFormatError("rank 0's parameters refer to themselves");
      k_->copy(p, models_[0].params(), bytes);
    } else {
      binary::read_array_into(in, host.data(), uint64_t(count), "a replica's parameters");
      k_->upload(p, host.data(), bytes);
    }
  }
  for (int r = 0; r < P_; ++r) {
    if (binary::read_bool(in, "an optimiser's flag")) {
      if (r == 0) throw binary::BinaryFormatError("rank 0's optimiser refers to itself");
      optimizers_[size_t(r)] = optimizers_[0];
    } else {
      optimizers_[size_t(r)].load_state(in);
    }
  }
  codec_->load_state(in);
  std::vector<float> m = binary::read_vector<float>(in, "the codec's first moments");
  std::vector<float> v = binary::read_vector<float>(in, "the codec's second moments");
  const int64_t steps = binary::read_i64(in, "the codec's step count");
  // Empty before the codec has parameters; else one moment per parameter.
  if (m.size() != v.size() || (!m.empty() && m.size() != size_t(codec_->param_count())))
    throw binary::BinaryFormatError("codec moments of " + std::to_string(m.size()) + " values for " +
                                    std::to_string(codec_->param_count()) + " parameters");
  codec_m_ = std::move(m);
  codec_v_ = std::move(v);
  codec_steps_ = steps;
}

}  // namespace lowband::parallel
