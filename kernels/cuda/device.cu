#include "kernels/cuda/check.cuh"
#include "kernels/cuda/context.cuh"
#include "kernels/device.h"

namespace lowband::kernels {

bool cuda_available(std::string* why_not) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why_not) *why_not = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    cudaGetLastError();  // clear the error so later CUDA calls do not report it again
    return false;
  }
  if (count == 0) {
    if (why_not) *why_not = "cudaGetDeviceCount found 0 devices";
    return false;
  }
  return true;
}

namespace cuda {

int device_count() {
  int count = 0;
  return cuda_available() && cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

void* device_alloc(size_t bytes) {
  void* ptr = nullptr;
  if (bytes == 0) return nullptr;
  LOWBAND_CUDA_CHECK(cudaMalloc(&ptr, bytes));
  return ptr;
}

void device_free(void* ptr) {
  if (ptr != nullptr) LOWBAND_CUDA_CHECK(cudaFree(ptr));
}

void copy_to_device(void* dst_device, const void* src_host, size_t bytes) {
  if (bytes == 0) return;
  // From pageable memory this returns once the source is staged: the caller may reuse it.
  LOWBAND_CUDA_CHECK(cudaMemcpyAsync(dst_device, src_host, bytes, cudaMemcpyHostToDevice, stream()));
}

void copy_to_host(void* dst_host, const void* src_device, size_t bytes) {
  if (bytes == 0) return;
  LOWBAND_CUDA_CHECK(cudaMemcpyAsync(dst_host, src_device, bytes, cudaMemcpyDeviceToHost, stream()));
  LOWBAND_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

void copy_on_device(void* dst_device, const void* src_device, size_t bytes) {
  if (bytes == 0) return;
  LOWBAND_CUDA_CHECK(cudaMemcpyAsync(dst_device, src_device, bytes, cudaMemcpyDeviceToDevice, stream()));
}

void fill_zero(void* dst_device, size_t bytes) {
  if (bytes == 0) return;
  LOWBAND_CUDA_CHECK(cudaMemsetAsync(dst_device, 0, bytes, stream()));
}

void synchronize() { LOWBAND_CUDA_CHECK(cudaStreamSynchronize(stream())); }

namespace {
constexpr int kChains = 8;  // independent FMA chains per thread hide FMA latency

__global__ void fma_peak_kernel(float* out, int iters, float mul, float add) {
  float acc[kChains];
#pragma unroll
  for (int j = 0; j < kChains; ++j) acc[j] = threadIdx.x * 1e-3f + j;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < kChains; ++j) acc[j] = fmaf(acc[j], mul, add);
  }
  float total = 0.0f;
#pragma unroll
  for (int j = 0; j < kChains; ++j) total += acc[j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = total;  // keeps the work live
}
}  // namespace

double measure_peak_fp32_gflops() {
  int device = 0, sms = 0;
  LOWBAND_CUDA_CHECK(cudaGetDevice(&device));
  LOWBAND_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int threads = 256, blocks = sms * 8, iters = 1 << 16;
  float* out = static_cast<float*>(device_alloc(size_t(threads) * blocks * sizeof(float)));
  cudaEvent_t start, stop;
  LOWBAND_CUDA_CHECK(cudaEventCreate(&start));
  LOWBAND_CUDA_CHECK(cudaEventCreate(&stop));
  double best = 0.0;
  for (int trial = 0; trial < 4; ++trial) {  // the first trial warms up clocks
    LOWBAND_CUDA_CHECK(cudaEventRecord(start, stream()));
    fma_peak_kernel<<<blocks, threads, 0, stream()>>>(out, iters, 0.9999999f, 1e-7f);
    LOWBAND_CUDA_CHECK_LAUNCH();
    LOWBAND_CUDA_CHECK(cudaEventRecord(stop, stream()));
    LOWBAND_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    LOWBAND_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    const double flops = 2.0 * kChains * double(iters) * threads * blocks;
    if (ms > 0.0f && flops / (ms * 1e-3) * 1e-9 > best) best = flops / (ms * 1e-3) * 1e-9;
  }
  LOWBAND_CUDA_CHECK(cudaEventDestroy(start));
  LOWBAND_CUDA_CHECK(cudaEventDestroy(stop));
  device_free(out);
  return best;
}

}  // namespace cuda
}  // namespace lowband::kernels
