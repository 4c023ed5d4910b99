#include "kernels/backend.h"

#include <array>
#include <atomic>
#include <cstring>
#include <utility>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

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

// Every kernel of the table, by name (two kernels with one signature, e.g.
// rope_forward and rope_backward, cannot be swapped): X(name) for each.
#define LOWBAND_KERNELS(X)                                                                        \
  X(matmul) X(add_inplace) X(scale_inplace) X(embedding_forward) X(embedding_backward)             \
  X(rmsnorm_forward) X(rmsnorm_backward) X(rope_forward) X(rope_backward) X(swiglu_forward)        \
  X(swiglu_backward) X(cross_entropy_forward) X(cross_entropy_backward) X(attention_forward)      \
  X(attention_merge) X(attention_backward_delta) X(attention_backward) X(adamw_step)              \
  X(global_grad_norm) X(clip_grad_norm)

Backend make_cpu() {
  Backend b{};
  b.device = Device::cpu;
  b.alloc = host_alloc, b.release = host_release, b.upload = host_copy, b.download = host_copy;
  b.copy = host_copy, b.zero = host_zero, b.synchronize = host_synchronize;
#define LOWBAND_CPU_KERNEL(name) b.name = cpu::name;
  LOWBAND_KERNELS(LOWBAND_CPU_KERNEL)
#undef LOWBAND_CPU_KERNEL
  return b;
}

// Device::dry: every kernel of the table, doing nothing (a value-returning one returns 0).
template <class F> struct Nothing;
template <class R, class... Args> struct Nothing<R (*)(Args...)> {
  static R call(Args...) {
    if constexpr (!std::is_void_v<R>) return R{};
  }
};

// One address for every dry allocation: pointer arithmetic on it stays
// well-defined enough for views (offsets), and nothing dereferences it.
void* dry_alloc(size_t bytes) {
  alignas(kHostAlignment) static unsigned char nowhere[kHostAlignment];
  return bytes == 0 ? nullptr : nowhere;
}
void dry_release(void*) {}
void dry_copy(void*, const void*, size_t) {}
void dry_zero(void*, size_t) {}

Backend make_dry() {
  Backend b{};
  b.device = Device::dry;
  b.alloc = dry_alloc, b.release = dry_release, b.upload = dry_copy, b.download = dry_copy;
  b.copy = dry_copy, b.zero = dry_zero, b.synchronize = host_synchronize;
#define LOWBAND_DRY_KERNEL(name) b.name = Nothing<decltype(&cpu::name)>::call;
  LOWBAND_KERNELS(LOWBAND_DRY_KERNEL)
#undef LOWBAND_DRY_KERNEL
  return b;
}

#ifdef LOWBAND_HAVE_CUDA
// f, called on CUDA device D: the calling thread's context there (its stream and
// cuBLAS handle) becomes current first. One table per device index holds these.
template <int D, auto F> struct OnDevice;
template <int D, class R, class... Args, R (*F)(Args...)>
struct OnDevice<D, F> {
  static R call(Args... args) {
    cuda::use_device(D);
    return F(args...);
  }
};

template <int D> Backend make_cuda() {
  Backend b{};
  b.device = Device::cuda;
  b.index = D;
  b.alloc = OnDevice<D, &cuda::device_alloc>::call, b.release = OnDevice<D, &cuda::device_free>::call;
  b.upload = OnDevice<D, &cuda::copy_to_device>::call, b.download = OnDevice<D, &cuda::copy_to_host>::call;
  b.copy = OnDevice<D, &cuda::copy_on_device>::call, b.zero = OnDevice<D, &cuda::fill_zero>::call;
  b.synchronize = OnDevice<D, &cuda::synchronize>::call;
#define LOWBAND_CUDA_KERNEL(name) b.name = OnDevice<D, &cuda::name>::call;
  LOWBAND_KERNELS(LOWBAND_CUDA_KERNEL)
#undef LOWBAND_CUDA_KERNEL
  return b;
}

template <int... D> std::array<Backend, sizeof...(D)> make_cuda_tables(std::integer_sequence<int, D...>) {
  return {make_cuda<D>()...};
}
#endif

#undef LOWBAND_KERNELS

}  // namespace

const char* device_name(Device device) {
  return device == Device::cuda ? "cuda" : device == Device::dry ? "dry" : "cpu";
}

namespace {
std::atomic<int> g_default_cuda_device{0};
}  // namespace

void set_default_cuda_device(int index) {
  if (index < 0) throw std::logic_error("set_default_cuda_device: index " + std::to_string(index) + " < 0");
  g_default_cuda_device = index;
}
int default_cuda_device() { return g_default_cuda_device; }

const Backend& backend(Device device, int index) {
  if (device == Device::cpu) {
    static const Backend cpu_table = make_cpu();  // built on first use: no init-order issue
    return cpu_table;
  }
  if (device == Device::dry) {
    static const Backend dry_table = make_dry();
    return dry_table;
  }
  std::string why;
  if (!cuda_available(&why)) throw std::runtime_error("no CUDA device: " + why);
#ifdef LOWBAND_HAVE_CUDA
  if (index < 0) index = default_cuda_device();
  const int count = cuda::device_count();
  if (index < 0 || index >= count || index >= kMaxCudaDevices)
    throw std::runtime_error("no CUDA device " + std::to_string(index) + ": this process sees " +
                             std::to_string(count) + " (devices 0.." + std::to_string(count - 1) + ")");
  static const auto cuda_tables = make_cuda_tables(std::make_integer_sequence<int, kMaxCudaDevices>());
  return cuda_tables[static_cast<size_t>(index)];
#else
  (void)index;
  throw std::runtime_error("no CUDA device: built without CUDA");
#endif
}

}  // namespace lowband::kernels
