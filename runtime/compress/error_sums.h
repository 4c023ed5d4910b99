#pragma once
// Per (layer, K or V) sums of ‖Z − Ẑ‖²_F and ‖Z‖²_F over the blocks a codec
// encoded since clear(), behind KvCodec::reconstruction_errors. The owner adds
// each block once, when it encodes it (the message is the same for all its
// receivers), so summing every rank's sums (data(), size(): all-reduce them in
// place) gives the figure one codec encoding every block would give, up to the
// order of the float64 additions.
#include <cstdint>
#include <vector>

#include "runtime/compress/kv_codec.h"

namespace lowband::compress {

class ErrorSums {
 public:
  // layers 0: grows to the deepest layer seen (codecs not told the model's depth;
  // ranks can then disagree on size(), so give the depth when all-reducing).
  explicit ErrorSums(int layers = 0) : sums_(size_t(layers) * 4, 0.0), fixed_(layers > 0) {}
  void clear();
  void add(int layer, KvTensor t, double err_sq, double norm_sq);
  // The sums of one contiguous block of count values.
  void add(const KvBlockId& id, int64_t count, const float* z, const float* z_hat);
  // Per layer √(err_sq / norm_sq), 0 where ‖Z‖ = 0; empty when !any() (no block
  // compressed since clear(): no figure rather than zeros).
  std::vector<double> relative(KvTensor t) const;
  bool any() const;  // some block with ‖Z‖ > 0 was added

  // (err_sq, norm_sq) per (layer, tensor), layer-major.
  double* data() { return sums_.data(); }
  int64_t size() const { return int64_t(sums_.size()); }

 private:
  std::vector<double> sums_;
  bool fixed_;
};

}  // namespace lowband::compress
