#pragma once
// A host view of a device buffer of `count` floats, for the communicators, which
// move host memory: the buffer itself on the CPU (and on a dry backend: nothing
// reads it), else a staged copy that put() writes back.
#include <cstdint>
#include <vector>

#include "kernels/backend.h"

namespace lowband::sync {

class HostView {
 public:
  HostView(const kernels::Backend& k, float* data, int64_t count) : k_(k), data_(data), count_(count) {
    if (kernels::host_addressable(k)) return;
    staged_.resize(static_cast<size_t>(count));
    k.download(staged_.data(), data, size_t(count) * sizeof(float));
  }
  float* get() { return staged_.empty() ? data_ : staged_.data(); }
  void put() {
    if (!staged_.empty()) k_.upload(data_, staged_.data(), size_t(count_) * sizeof(float));
  }

 private:
  const kernels::Backend& k_;
  float* data_;
  int64_t count_;
  std::vector<float> staged_;
};

}  // namespace lowband::sync
