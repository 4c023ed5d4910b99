#pragma once
// An owning array of T in one backend's memory (host for cpu, device for cuda),
// zero-filled on creation; move-only. to_host()/upload() cross to and from the host
// (a dry backend's buffer holds no values: to_host() is empty).
#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kernels/backend.h"

namespace lowband::kernels {

template <typename T>
class BackendBuffer {
 public:
  BackendBuffer() = default;
  BackendBuffer(const Backend& backend, size_t count)
      : backend_(&backend), ptr_(static_cast<T*>(backend.alloc(count * sizeof(T)))),
        count_(count) {
    backend.zero(ptr_, count * sizeof(T));
  }
  BackendBuffer(const Backend& backend, const std::vector<T>& host)
      : BackendBuffer(backend, host.size()) {
    upload(host.data(), host.size());
  }
  ~BackendBuffer() { reset(); }
  BackendBuffer(const BackendBuffer&) = delete;
  BackendBuffer& operator=(const BackendBuffer&) = delete;
  BackendBuffer(BackendBuffer&& o) noexcept
      : backend_(o.backend_), ptr_(std::exchange(o.ptr_, nullptr)),
        count_(std::exchange(o.count_, 0)) {}
  BackendBuffer& operator=(BackendBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      backend_ = o.backend_;
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }

  // Copies count elements from host memory into the start of the buffer.
  void upload(const T* host, size_t count) {
    if (count > count_) throw std::out_of_range("BackendBuffer::upload: more than the buffer holds");
    if (count != 0) backend_->upload(ptr_, host, count * sizeof(T));
  }
  std::vector<T> to_host() const {
    if (backend_ != nullptr && backend_->device == Device::dry) return {};
    std::vector<T> host(count_);
    if (count_ != 0) backend_->download(host.data(), ptr_, count_ * sizeof(T));
    return host;
  }

 private:
  void reset() noexcept {
    if (ptr_ != nullptr) backend_->release(ptr_);  // cudaFree fails only on a broken context
    ptr_ = nullptr;
    count_ = 0;
  }
  const Backend* backend_ = nullptr;
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

// `count` floats of k's memory at `ptr`, readable on the host: ptr itself on the
// CPU (or a dry backend: never read), else a copy in `host` (resized). For
// host-side code (codecs) on any backend.
inline const float* host_view(const Backend& k, const float* ptr, size_t count, std::vector<float>& host) {
  if (host_addressable(k)) return ptr;
  host.resize(count);
  k.download(host.data(), ptr, count * sizeof(float));
  return host.data();
}

}  // namespace lowband::kernels
