#pragma once
// Error checks for every CUDA and cuBLAS call: throw std::runtime_error naming
// the file, line, the call and the library's error string.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace lowband::kernels::cuda::detail {

inline void throw_cuda(cudaError_t err, const char* call, const char* file, int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                           " failed: " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

inline void throw_cublas(cublasStatus_t st, const char* call, const char* file, int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                           " failed: " + cublasGetStatusName(st) + ": " +
                           cublasGetStatusString(st));
}

}  // namespace lowband::kernels::cuda::detail

#define LOWBAND_CUDA_CHECK(call)                                                     \
  do {                                                                               \
    const cudaError_t lowband_err_ = (call);                                         \
    if (lowband_err_ != cudaSuccess)                                                 \
      ::lowband::kernels::cuda::detail::throw_cuda(lowband_err_, #call, __FILE__, __LINE__); \
  } while (0)

#define LOWBAND_CUBLAS_CHECK(call)                                                   \
  do {                                                                               \
    const cublasStatus_t lowband_st_ = (call);                                       \
    if (lowband_st_ != CUBLAS_STATUS_SUCCESS)                                        \
      ::lowband::kernels::cuda::detail::throw_cublas(lowband_st_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: catch bad launch configurations at once.
#define LOWBAND_CUDA_CHECK_LAUNCH() LOWBAND_CUDA_CHECK(cudaGetLastError())
