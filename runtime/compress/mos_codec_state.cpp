// MosCodec checkpoints: what a codec built from the same options needs to take
// the next step exactly as the one that wrote it would have.
#include <algorithm>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "common/binary_io.h"
#include "runtime/compress/mos_codec.h"

namespace lowband::compress {
namespace {

constexpr uint64_t kMosStateTag = 0x6d6f732d73746174ULL;  // "mos-stat"

void check_size(size_t got, size_t want, const char* what) {
  if (got != want)
    throw binary::BinaryFormatError(std::string("MoS ") + what + ": " + std::to_string(got) + " values, expected " +
                                    std::to_string(want));
}

}  // namespace

void MosCodec::save_state(std::ostream& out) const {
  binary::write_u64(out, kMosStateTag);
  binary::write_i64(out, step_);
  binary::write_bool(out, fitted_);
  binary::write_u64(out, bases_.size());
  for (const Basis& b : bases_) {
    binary::write_vector(out, b.u0);
    binary::write_vector(out, b.au0);
    binary::write_vector(out, b.a2u0);
  }
  // Per key, one (d, d) vector each (the format predates the flat buffer).
  const size_t d2 = size_t(opt_.head_dim) * size_t(opt_.head_dim);
  binary::write_u64(out, grams_.size() / d2);
  for (size_t k = 0; k < grams_.size() / d2; ++k)
    binary::write_vector(out, std::vector<float>(grams_.begin() + k * d2, grams_.begin() + (k + 1) * d2));
  binary::write_vector(out, gram_rows_);
  binary::write_vector(out, params_);
  binary::write_vector(out, grads_);
}

void MosCodec::load_state(std::istream& in) {
  if (binary::read_u64(in, "the MoS state") != kMosStateTag)
    throw binary::BinaryFormatError("no MoS codec state where one was expected");
  const int64_t step = binary::read_i64(in, "the MoS step");
  const bool fitted = binary::read_bool(in, "the MoS phase");
  check_size(size_t(binary::read_length(in, "the MoS bases")), bases_.size(), "bases");
  const size_t d = size_t(opt_.head_dim);
  std::vector<Basis> bases(bases_.size());
  for (int layer = 0; layer < opt_.layers; ++layer)
    for (KvTensor t : {KvTensor::k, KvTensor::v})
      for (int h = 0; h < opt_.kv_heads; ++h) {
        Basis& b = bases[size_t(key(layer, t, h))];
        const size_t want = fitted ? d * size_t(rank(t)) : 0;  // empty until the fit
        b.u0 = binary::read_vector<float>(in, "a MoS U0");
        b.au0 = binary::read_vector<float>(in, "a MoS A·U0");
        b.a2u0 = binary::read_vector<float>(in, "a MoS A²·U0");
        check_size(b.u0.size(), want, "U0");
        check_size(b.au0.size(), want * m(), "A·U0");  // m generators: m, and m·m, of them
        check_size(b.a2u0.size(), want * m() * m(), "A²·U0");
      }
  const size_t gram_keys = size_t(binary::read_length(in, "the MoS Gram sums"));
  if (gram_keys != 0) check_size(gram_keys, bases_.size(), "Gram sums");
  std::vector<float> grams;
  grams.reserve(gram_keys * d * d);
  for (size_t k = 0; k < gram_keys; ++k) {
    const auto g = binary::read_vector<float>(in, "a MoS Gram sum");
    check_size(g.size(), d * d, "Gram sum");
    grams.insert(grams.end(), g.begin(), g.end());
  }
  std::vector<int64_t> gram_rows = binary::read_vector<int64_t>(in, "the MoS Gram rows");
  check_size(gram_rows.size(), gram_keys, "Gram rows");
  std::vector<float> params = binary::read_vector<float>(in, "the MoS parameters");
  std::vector<float> grads = binary::read_vector<float>(in, "the MoS gradients");
  check_size(params.size(), params_.size(), "parameters");
  check_size(grads.size(), grads_.size(), "gradients");
  // Only now, with everything read and checked, replace the state.
  step_ = int(step);
  fitted_ = fitted;
  bases_ = std::move(bases);
  grams_ = std::move(grams);
  gram_rows_ = std::move(gram_rows);
  params_ = std::move(params);
  grads_ = std::move(grads);
  sent_.clear();
  received_.clear();
  errors_.clear();
}

}  // namespace lowband::compress
