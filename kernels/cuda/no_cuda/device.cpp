// Stand-ins for a build without nvcc: cuda_available() says why, the rest throw.
#include "kernels/device.h"

#include <stdexcept>

namespace lowband::kernels {

bool cuda_available(std::string* why_not) {
  if (why_not) *why_not = "built without CUDA";
  return false;
}

namespace cuda {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw std::runtime_error(std::string("lowband::kernels::cuda::") + what +
                           ": built without CUDA");
}
}  // namespace

int device_count() { return 0; }
void use_device(int) { no_cuda("use_device"); }
void* device_alloc(size_t) { no_cuda("device_alloc"); }
void device_free(void* ptr) {
  if (ptr != nullptr) no_cuda("device_free");
}
void copy_to_device(void*, const void*, size_t) { no_cuda("copy_to_device"); }
void copy_to_host(void*, const void*, size_t) { no_cuda("copy_to_host"); }
void copy_on_device(void*, const void*, size_t) { no_cuda("copy_on_device"); }
void fill_zero(void*, size_t) { no_cuda("fill_zero"); }
void synchronize() { no_cuda("synchronize"); }
double measure_peak_fp32_gflops() { no_cuda("measure_peak_fp32_gflops"); }

}  // namespace cuda
}  // namespace lowband::kernels
