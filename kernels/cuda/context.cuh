#pragma once
// The CUDA device a host thread works on, with its stream and cuBLAS handle there.
// Every kernel, copy and GEMM of the CUDA backend runs on the calling thread's
// current context; the table backend(Device::cuda, d) makes device d current
// before each call (kernels/backend.cpp), so one process can drive several GPUs
// (a thread per rank) and the ranks' work on one GPU does not share a stream.
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace lowband::kernels::cuda {

struct DeviceContext {
  int device = -1;
  // A blocking stream: ordered against the legacy default stream, which Thrust's
  // thrust::device policy and cudaMallocAsync(cudaStreamLegacy) use, so those need
  // no extra synchronisation; other threads' streams run concurrently with it.
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;  // bound to `stream`
};

// The calling thread's current context: the one use_device (kernels/device.h)
// last chose, else the CUDA runtime's current device's (0 unless cudaSetDevice
// said otherwise). Created on first use per (thread, device), destroyed with the thread.
const DeviceContext& current_context();
inline cudaStream_t stream() { return current_context().stream; }

}  // namespace lowband::kernels::cuda
