// kernels/device.h: availability reports a reason when false; on a device,
// memory round-trips; without CUDA compiled in, every device call throws.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "kernels/device.h"

namespace lowband::kernels {
namespace {

TEST(Device, UnavailableComesWithAReason) {
  std::string why;
  const bool available = cuda_available(&why);
#ifndef LOWBAND_HAVE_CUDA
  EXPECT_FALSE(available);
  EXPECT_EQ(why, "built without CUDA");
  EXPECT_THROW(cuda::device_alloc(16), std::runtime_error);
  EXPECT_THROW(cuda::synchronize(), std::runtime_error);
#else
  if (available) GTEST_SKIP() << "a CUDA device is present; see RoundTripsThroughDeviceMemory";
  EXPECT_FALSE(why.empty()) << "cuda_available() returned false without saying why";
#endif
}

TEST(Device, RoundTripsThroughDeviceMemory) {
  std::string why;
  if (!cuda_available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  const std::vector<float> host = {1.0f, -2.5f, 3.25f, 1e30f, -0.0f};
  void* dev = cuda::device_alloc(host.size() * sizeof(float));
  cuda::copy_to_device(dev, host.data(), host.size() * sizeof(float));
  std::vector<float> back(host.size(), 0.0f);
  cuda::synchronize();
  cuda::copy_to_host(back.data(), dev, host.size() * sizeof(float));
  cuda::device_free(dev);
  EXPECT_EQ(back, host);
}

}  // namespace
}  // namespace lowband::kernels
