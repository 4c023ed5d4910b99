// One backend table per CUDA device (kernels/backend.h): every table's functions
// run on their own device, and threads sharing a device each use their own
// stream, so work from several threads at once still gives the CPU's results.
// The GPU cases skip, saying why, where no GPU is present.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernels/backend.h"
#include "kernels/device.h"
#include "tests/kernels/reference.h"

namespace lowband::kernels {
namespace {

using test::Rng;

TEST(DeviceBackends, CpuTableIgnoresTheIndexAndBadDefaultsAreRefused) {
  EXPECT_EQ(&backend(Device::cpu, 3), &backend(Device::cpu));
  EXPECT_EQ(backend(Device::cpu).device, Device::cpu);
  EXPECT_THROW(set_default_cuda_device(-1), std::logic_error);
}

TEST(DeviceBackends, NoTableForADeviceThatIsNotThere) {
  const int count = cuda::device_count();
  if (count == 0) {
    EXPECT_THROW(backend(Device::cuda, 0), std::runtime_error);
    return;
  }
  try {
    backend(Device::cuda, count);
    FAIL() << "backend(cuda, " << count << ") with " << count << " devices did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device " + std::to_string(count)), std::string::npos) << e.what();
  }
}

// C = A·B on `k` (through its own upload/download), against the CPU table.
std::vector<float> matmul_on(const Backend& k, const std::vector<float>& A, const std::vector<float>& B, int64_t M,
                             int64_t N, int64_t K) {
  const size_t a = A.size() * sizeof(float), b = B.size() * sizeof(float), c = size_t(M * N) * sizeof(float);
  void* dA = k.alloc(a);
  void* dB = k.alloc(b);
  void* dC = k.alloc(c);
  k.upload(dA, A.data(), a);
  k.upload(dB, B.data(), b);
  k.zero(dC, c);
  k.matmul(Trans::no, Trans::no, M, N, K, 1.0f, static_cast<float*>(dA), K, static_cast<float*>(dB), N, 0.0f,
           static_cast<float*>(dC), N);
  k.add_inplace(static_cast<float*>(dC), static_cast<float*>(dC), M * N);  // a kernel after the GEMM: 2·A·B
  std::vector<float> out(size_t(M * N));
  k.download(out.data(), dC, c);
  k.release(dA), k.release(dB), k.release(dC);
  return out;
}

TEST(DeviceBackends, EveryDevicesTableComputesOnItsDevice) {
  const int count = cuda::device_count();
  if (count == 0) GTEST_SKIP() << "no CUDA device";
  Rng rng(11);
  const int64_t M = 96, N = 80, K = 112;
  const auto A = test::random_floats(rng, size_t(M * K)), B = test::random_floats(rng, size_t(K * N));
  const std::vector<float> ref = matmul_on(backend(Device::cpu), A, B, M, N, K);
  for (int d = 0; d < count && d < kMaxCudaDevices; ++d) {
    const Backend& k = backend(Device::cuda, d);
    EXPECT_EQ(k.index, d);
    EXPECT_EQ(k.device, Device::cuda);
    EXPECT_LT(test::rel_error(matmul_on(k, A, B, M, N, K), ref), 1e-5) << "device " << d;
  }
}

TEST(DeviceBackends, ThreadsSharingADeviceEachGetTheirOwnResults) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const int64_t M = 128, N = 128, K = 256;
  constexpr int kThreads = 4;
  std::vector<std::vector<float>> A(kThreads), B(kThreads), got(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    Rng rng(100 + t);
    A[t] = test::random_floats(rng, size_t(M * K)), B[t] = test::random_floats(rng, size_t(K * N));
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) got[t] = matmul_on(backend(Device::cuda, 0), A[t], B[t], M, N, K);
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_LT(test::rel_error(got[t], matmul_on(backend(Device::cpu), A[t], B[t], M, N, K)), 1e-5) << "thread " << t;
}

}  // namespace
}  // namespace lowband::kernels
