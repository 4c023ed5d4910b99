#include "kernels/backend.h"

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "kernels/device.h"

namespace lowband::kernels {
namespace {

constexpr size_t kHostAlignment = 64;  // a cache line, as common/aligned_buffer.h

void* host_alloc(size_t bytes) {
  return bytes == 0 ? nullptr : ::operator new(bytes, std::align_val_t(kHostAlignment));
}
void host_release(void* ptr) {
  if (ptr != nullptr) ::operator delete(ptr, std::align_val_t(kHostAlignment));
}
void host_copy(void* dst, const void* src, size_t bytes) {
  if (bytes != 0) std::memcpy(dst, src, bytes);
}
void host_zero(void* dst, size_t bytes) {
  if (bytes != 0) std::memset(dst, 0, bytes);
}
void host_synchronize() {}

// Every kernel of the table from namespace ns, assigned by name (two kernels
// with one signature, e.g. rope_forward and rope_backward, cannot be swapped).
#define LOWBAND_ASSIGN_KERNELS(b, ns)                                                          \
  b.matmul = ns::matmul, b.add_inplace = ns::add_inplace, b.scale_inplace = ns::scale_inplace, \
  b.embedding_forward = ns::embedding_forward, b.embedding_backward = ns::embedding_backward,  \
  b.rmsnorm_forward = ns::rmsnorm_forward, b.rmsnorm_backward = ns::rmsnorm_backward,          \
  b.rope_forward = ns::rope_forward, b.rope_backward = ns::rope_backward,                      \
  b.swiglu_forward = ns::swiglu_forward, b.swiglu_backward = ns::swiglu_backward,              \
  b.cross_entropy_forward = ns::cross_entropy_forward,                                         \
  b.cross_entropy_backward = ns::cross_entropy_backward,                                       \
  b.attention_forward = ns::attention_forward, b.attention_merge = ns::attention_merge,        \
  b.attention_backward_delta = ns::attention_backward_delta,                                   \
  b.attention_backward = ns::attention_backward, b.adamw_step = ns::adamw_step,                \
  b.global_grad_norm = ns::global_grad_norm, b.clip_grad_norm = ns::clip_grad_norm

Backend make_cpu() {
  Backend b{};
  b.device = Device::cpu;
  b.alloc = host_alloc, b.release = host_release, b.upload = host_copy, b.download = host_copy;
  b.copy = host_copy, b.zero = host_zero, b.synchronize = host_synchronize;
  LOWBAND_ASSIGN_KERNELS(b, cpu);
  return b;
}

#ifdef LOWBAND_HAVE_CUDA
Backend make_cuda() {
  Backend b{};
  b.device = Device::cuda;
  b.alloc = cuda::device_alloc, b.release = cuda::device_free, b.upload = cuda::copy_to_device;
  b.download = cuda::copy_to_host, b.copy = cuda::copy_on_device, b.zero = cuda::fill_zero;
  b.synchronize = cuda::synchronize;
  LOWBAND_ASSIGN_KERNELS(b, cuda);
  return b;
}
#endif

#undef LOWBAND_ASSIGN_KERNELS

}  // namespace

const char* device_name(Device device) { return device == Device::cuda ? "cuda" : "cpu"; }

const Backend& backend(Device device) {
  if (device == Device::cpu) {
    static const Backend cpu_table = make_cpu();  // built on first use: no init-order issue
    return cpu_table;
  }
  std::string why;
  if (!cuda_available(&why)) throw std::runtime_error("no CUDA device: " + why);
#ifdef LOWBAND_HAVE_CUDA
  static const Backend cuda_table = make_cuda();
  return cuda_table;
#else
  throw std::runtime_error("no CUDA device: built without CUDA");
#endif
}

}  // namespace lowband::kernels
