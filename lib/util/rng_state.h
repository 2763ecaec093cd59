// libtorch's default random generators (CPU, and this rank's GPU with a CUDA libtorch) as
// bytes, so a checkpoint can put them back. Nothing in training draws from them today (no
// dropout; presets seed per parameter), but a resumed run must not differ if something does.
#pragma once

#include <cstdint>
#include <vector>

namespace st {

struct RngState {
  std::vector<uint8_t> cpu;
  std::vector<uint8_t> cuda;  // empty without a CUDA libtorch or device
};

RngState capture_rng_state(int cuda_device);
void restore_rng_state(const RngState& state, int cuda_device);

}  // namespace st
