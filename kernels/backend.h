#pragma once
// One device's kernels and memory operations as a table of functions. cpu:: and
// cuda:: declare the same kernel signatures, so code written against a Backend
// (the model, its local attention, the training-step benchmark) runs on either.
// Every pointer handed to a backend's functions is that device's memory: host
// memory for Device::cpu, CUDA device memory for Device::cuda.
//
// Device::dry is shapes only, as PyTorch's meta tensors: alloc hands out an
// address that nothing reads or writes, copies and kernels return at once (0
// where they return a value). A dry run of the rank programs
// (runtime/parallel/dry_steps.h) goes through their calls, and so their messages
// and their profile-timed compute, without allocating or computing anything.
#include <cstddef>

#include "kernels/adamw.h"
#include "kernels/attention.h"
#include "kernels/cross_entropy.h"
#include "kernels/elementwise.h"
#include "kernels/embedding.h"
#include "kernels/matmul.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"

namespace lowband::kernels {

enum class Device { cpu, cuda, dry };
const char* device_name(Device device);  // "cpu", "cuda", "dry"

struct Backend {
  Device device;
  int index = 0;  // which CUDA device (Device::cuda); 0 for the cpu
  // Memory. alloc(0) returns nullptr; cpu memory is 64-byte aligned.
  void* (*alloc)(size_t bytes);
  void (*release)(void* ptr);                                       // nullptr: no-op
  void (*upload)(void* dst, const void* host_src, size_t bytes);    // host -> this device
  void (*download)(void* host_dst, const void* src, size_t bytes);  // this device -> host
  void (*copy)(void* dst, const void* src, size_t bytes);           // within this device
  void (*zero)(void* dst, size_t bytes);
  void (*synchronize)();  // waits for the calling thread's queued work on the device (cpu: returns at once)
  // Kernels (see each header for shapes).
  decltype(&cpu::matmul) matmul;
  decltype(&cpu::add_inplace) add_inplace;
  decltype(&cpu::scale_inplace) scale_inplace;
  decltype(&cpu::embedding_forward) embedding_forward;
  decltype(&cpu::embedding_backward) embedding_backward;
  decltype(&cpu::rmsnorm_forward) rmsnorm_forward;
  decltype(&cpu::rmsnorm_backward) rmsnorm_backward;
  decltype(&cpu::rope_forward) rope_forward;
  decltype(&cpu::rope_backward) rope_backward;
  decltype(&cpu::swiglu_forward) swiglu_forward;
  decltype(&cpu::swiglu_backward) swiglu_backward;
  decltype(&cpu::cross_entropy_forward) cross_entropy_forward;
  decltype(&cpu::cross_entropy_backward) cross_entropy_backward;
  decltype(&cpu::attention_forward) attention_forward;
  decltype(&cpu::attention_merge) attention_merge;
  decltype(&cpu::attention_backward_delta) attention_backward_delta;
  decltype(&cpu::attention_backward) attention_backward;
  decltype(&cpu::adamw_step) adamw_step;
  decltype(&cpu::global_grad_norm) global_grad_norm;
  decltype(&cpu::clip_grad_norm) clip_grad_norm;
};

// Whether host code may take the backend's pointers as they are: the CPU's
// memory, or a dry table's (never read: what reads it in a dry run is dry too).
inline bool host_addressable(const Backend& k) { return k.device != Device::cuda; }

// The most CUDA devices one process drives (one table each).
constexpr int kMaxCudaDevices = 16;

// The table for a device (Device::dry: the table that does nothing). For Device::cuda, `index` picks the GPU: every function
// of that table runs on CUDA device `index`, on the calling thread's own stream
// and cuBLAS handle there (kernels/cuda/context.cuh), so ranks on threads of one
// process can each drive their own GPU. Throws std::runtime_error when CUDA is
// not compiled in or device `index` is not usable (the message says why).
// index < 0: the process's default CUDA device (default_cuda_device()).
const Backend& backend(Device device, int index = -1);

// The CUDA device backend(Device::cuda) gives when no index is named: 0 unless
// set_default_cuda_device chose another (under mpirun: the rank's GPU on its node).
void set_default_cuda_device(int index);
int default_cuda_device();

}  // namespace lowband::kernels
