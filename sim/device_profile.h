#pragma once
// A device's capabilities, for turning a kernel's FLOPs and bytes into seconds
// where times are not measured: roofline time divided by an achievable efficiency.
#include <string>
#include <vector>

#include "common/words.h"

namespace lowband::sim {

enum class DType { fp32, tf32, bf16, fp16 };
const Words<DType>& dtype_words();  // as devices.dtype spells them

struct DeviceProfile {
  std::string name;
  double peak_flops_fp32 = 0;   // dense, FLOP/s
  double peak_flops_tf32 = 0;   // dense tensor-core, FLOP/s (0: same as fp32)
  double peak_flops_bf16 = 0;   // dense tensor-core, FLOP/s (fp16 taken as equal)
  double memory_bandwidth_bytes_per_s = 0;
  double memory_bytes = 0;
  double efficiency = 1;        // achievable fraction of peak FLOP/s and bandwidth

  double peak_flops(DType dtype) const;
  // Roofline: max(flops / (peak * efficiency), bytes / (bandwidth * efficiency)).
  double seconds(double flops, double bytes, DType dtype) const;
};

// Built-in profiles: A100-40GB, A100-80GB, H100-SXM, RTX-4090, L4, cpu.
const std::vector<DeviceProfile>& builtin_device_profiles();
// nullptr when no built-in profile has that name.
const DeviceProfile* find_builtin_device(const std::string& name);

}  // namespace lowband::sim
