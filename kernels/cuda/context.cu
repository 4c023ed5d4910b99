#include <map>
#include <memory>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/context.cuh"
#include "kernels/device.h"

namespace lowband::kernels::cuda {

namespace {

// One thread's contexts, one per device it has used. Destroyed at thread exit,
// when the CUDA runtime may already be shutting down: errors there are ignored.
class ThreadContexts {
 public:
  ThreadContexts() = default;
  ThreadContexts(const ThreadContexts&) = delete;
  ThreadContexts& operator=(const ThreadContexts&) = delete;
  ~ThreadContexts() {
    for (auto& [device, c] : by_device_) {
      if (cudaSetDevice(device) != cudaSuccess) continue;
      if (c.blas) cublasDestroy(c.blas);
      if (c.stream) cudaStreamDestroy(c.stream);
    }
  }

  // Makes `device` current for this thread (cudaSetDevice only when it changes).
  const DeviceContext& bind(int device) {
    if (current_ && current_->device == device) return *current_;
    LOWBAND_CUDA_CHECK(cudaSetDevice(device));
    auto it = by_device_.find(device);
    if (it == by_device_.end()) {
      DeviceContext c;
      c.device = device;
      LOWBAND_CUDA_CHECK(cudaStreamCreateWithFlags(&c.stream, cudaStreamDefault));
      LOWBAND_CUBLAS_CHECK(cublasCreate(&c.blas));
      LOWBAND_CUBLAS_CHECK(cublasSetStream(c.blas, c.stream));
      it = by_device_.emplace(device, c).first;
    }
    current_ = &it->second;
    return *current_;
  }
  const DeviceContext& current() {
    if (current_) return *current_;
    int device = 0;
    LOWBAND_CUDA_CHECK(cudaGetDevice(&device));
    return bind(device);
  }

 private:
  std::map<int, DeviceContext> by_device_;
  const DeviceContext* current_ = nullptr;
};

ThreadContexts& thread_contexts() {
  thread_local ThreadContexts contexts;
  return contexts;
}

}  // namespace

const DeviceContext& current_context() { return thread_contexts().current(); }

void use_device(int device) { thread_contexts().bind(device); }

}  // namespace lowband::kernels::cuda
