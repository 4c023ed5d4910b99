#include "sim/device_profile.h"

#include <algorithm>

namespace lowband::sim {

double DeviceProfile::peak_flops(DType dtype) const {
  switch (dtype) {
    case DType::fp32: return peak_flops_fp32;
    case DType::tf32: return peak_flops_tf32 > 0 ? peak_flops_tf32 : peak_flops_fp32;
    case DType::bf16:
    case DType::fp16: return peak_flops_bf16 > 0 ? peak_flops_bf16 : peak_flops_fp32;
  }
  return peak_flops_fp32;
}

double DeviceProfile::seconds(double flops, double bytes, DType dtype) const {
  const double compute_s = flops / (peak_flops(dtype) * efficiency);
  const double memory_s = bytes / (memory_bandwidth_bytes_per_s * efficiency);
  return std::max(compute_s, memory_s);
}

const Words<DType>& dtype_words() {
  static const Words<DType> words = {
      {"fp32", DType::fp32}, {"tf32", DType::tf32}, {"bf16", DType::bf16}, {"fp16", DType::fp16}};
  return words;
}

const std::vector<DeviceProfile>& builtin_device_profiles() {
  constexpr double T = 1e12, G = 1e9, GiB = 1024.0 * 1024 * 1024;
  // Datasheet dense peaks (no structured sparsity). Efficiency is the fraction of
  // peak a well-tuned long-context training step reaches (about 40-50% MFU on
  // data-centre GPUs); the cpu profile is measured on the development machine
  // (docs/machines.md: Intel Xeon, AVX-512, 350 GFLOP/s fp32 on two cores, 27 GB/s STREAM).
  static const std::vector<DeviceProfile> profiles = {
      {"A100-40GB", 19.5 * T, 156 * T, 312 * T, 1555 * G, 40 * GiB, 0.45},
      {"A100-80GB", 19.5 * T, 156 * T, 312 * T, 2039 * G, 80 * GiB, 0.45},
      {"H100-SXM", 67 * T, 495 * T, 989 * T, 3350 * G, 80 * GiB, 0.45},
      {"RTX-4090", 82.6 * T, 82.6 * T, 165 * T, 1008 * G, 24 * GiB, 0.45},
      {"L4", 30.3 * T, 60 * T, 121 * T, 300 * G, 24 * GiB, 0.45},
      {"cpu", 350 * G, 0, 0, 27 * G, 24 * GiB, 0.8},
  };
  return profiles;
}

const DeviceProfile* find_builtin_device(const std::string& name) {
  for (const auto& p : builtin_device_profiles())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace lowband::sim
