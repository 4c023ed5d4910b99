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

// The same kernel names from namespace ns, in the table's order.
#define LOWBAND_KERNEL_TABLE(ns)                                                         \
  ns::matmul, ns::add_inplace, ns::scale_inplace, ns::embedding_forward, ns::embedding_backward,            \
      ns::rmsnorm_forward, ns::rmsnorm_backward, ns::rope_forward, ns::rope_backward,    \
      ns::swiglu_forward, ns::swiglu_backward, ns::cross_entropy_forward,                \
      ns::cross_entropy_backward, ns::attention_forward, ns::attention_merge, ns::attention_backward_delta,   \
      ns::attention_backward, ns::adamw_step, ns::global_grad_norm, ns::clip_grad_norm

const Backend kCpu = {Device::cpu, host_alloc, host_release,     host_copy,
                      host_copy,   host_copy,  host_zero,        host_synchronize,
                      LOWBAND_KERNEL_TABLE(cpu)};

#ifdef LOWBAND_HAVE_CUDA
const Backend kCuda = {Device::cuda,        cuda::device_alloc,  cuda::device_free,
                       cuda::copy_to_device, cuda::copy_to_host,  cuda::copy_on_device,
                       cuda::fill_zero,      cuda::synchronize,   LOWBAND_KERNEL_TABLE(cuda)};
#endif

#undef LOWBAND_KERNEL_TABLE

}  // namespace

const char* device_name(Device device) { return device == Device::cuda ? "cuda" : "cpu"; }

const Backend& backend(Device device) {
  if (device == Device::cpu) return kCpu;
  std::string why;
  if (!cuda_available(&why)) throw std::runtime_error("no CUDA device: " + why);
#ifdef LOWBAND_HAVE_CUDA
  return kCuda;
#else
  throw std::runtime_error("no CUDA device: built without CUDA");
#endif
}

}  // namespace lowband::kernels
