#pragma once
// Device (GPU) memory and availability, behind a header with no CUDA includes so
// the CPU-only build stays clean. Implemented in kernels/cuda/device.cu when nvcc
// exists (LOWBAND_HAVE_CUDA=1), else in kernels/cuda/no_cuda/device.cpp.
#include <cstddef>
#include <string>

namespace lowband::kernels {

// True when CUDA is compiled in and at least one device can be used. When false,
// *why_not (if given) says why: "built without CUDA", or the error string from
// cudaGetDeviceCount (e.g. "no CUDA-capable device is detected").
bool cuda_available(std::string* why_not = nullptr);

namespace cuda {
// How many CUDA devices this process can use (0 without CUDA or without a device).
int device_count();
// Makes CUDA device `device` the calling thread's current one: the CUDA backend's
// calls from this thread then run on that device, on the thread's own stream and
// cuBLAS handle there (kernels/cuda/context.cuh). backend(Device::cuda, d) calls
// it before each of its functions; code that calls cuda:: directly may too.
void use_device(int device);

// All of these throw std::runtime_error (with file:line and the CUDA error
// string) on failure, and always throw in a build without CUDA.
void* device_alloc(size_t bytes);
void device_free(void* ptr);  // nullptr is a no-op
void copy_to_device(void* dst_device, const void* src_host, size_t bytes);
void copy_to_host(void* dst_host, const void* src_device, size_t bytes);
void copy_on_device(void* dst_device, const void* src_device, size_t bytes);
void fill_zero(void* dst_device, size_t bytes);  // all bytes 0 (0.0f for floats)
void synchronize();  // waits for the calling thread's stream on its current device

// The device's fp32 FMA throughput, measured with a register-only FMA kernel
// (for benchmarks' "% of peak"; a probe, not a datasheet figure). GFLOP/s.
double measure_peak_fp32_gflops();
}  // namespace cuda

}  // namespace lowband::kernels
