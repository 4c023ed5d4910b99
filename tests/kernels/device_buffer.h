#pragma once
// For the CUDA-versus-CPU tests: a device copy of a host vector, freed on scope exit.
#include <vector>

#include "kernels/device.h"

namespace lowband::kernels::test {

template <typename T>
class DeviceVec {
 public:
  explicit DeviceVec(const std::vector<T>& host)
      : size_(host.size()), ptr_(static_cast<T*>(cuda::device_alloc(host.size() * sizeof(T)))) {
    cuda::copy_to_device(ptr_, host.data(), size_ * sizeof(T));
  }
  ~DeviceVec() { cuda::device_free(ptr_); }
  DeviceVec(const DeviceVec&) = delete;
  DeviceVec& operator=(const DeviceVec&) = delete;
  T* get() { return ptr_; }
  std::vector<T> to_host() const {
    std::vector<T> host(size_);
    cuda::synchronize();
    cuda::copy_to_host(host.data(), ptr_, size_ * sizeof(T));
    return host;
  }

 private:
  size_t size_;
  T* ptr_;
};

}  // namespace lowband::kernels::test
