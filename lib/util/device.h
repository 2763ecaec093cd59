// Which device a rank computes on: its node-local GPU when libtorch has CUDA and one is
// present, else the CPU. "cuda" without a usable GPU is an error rather than a silent fallback.
#pragma once

#include <c10/core/Device.h>

#include <string>

namespace st {

// choice: auto | cpu | cuda. Throws ConfigError for an unknown choice or an unavailable GPU.
c10::Device select_device(const std::string& choice, int local_device);

}  // namespace st
