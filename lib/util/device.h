// Which device a rank computes on: its node-local GPU when libtorch has CUDA and one is
// present, else the CPU. "cuda" without a usable GPU is an error rather than a silent fallback.
#pragma once

#include <c10/core/Device.h>

#include "util/enum_names.h"

namespace st {

enum class DeviceChoice { automatic, cpu, cuda };
template <>
struct EnumNames<DeviceChoice> {
  static constexpr NamedValue<DeviceChoice> table[] = {
      {DeviceChoice::automatic, "auto"}, {DeviceChoice::cpu, "cpu"}, {DeviceChoice::cuda, "cuda"}};
};

// Throws ConfigError for cuda without a usable GPU.
c10::Device select_device(DeviceChoice choice, int local_device);

// The CUDA device's index, -1 for the CPU (what the RNG-state and memory helpers take).
inline int cuda_device_index(const c10::Device& device) { return device.is_cuda() ? device.index() : -1; }

}  // namespace st
