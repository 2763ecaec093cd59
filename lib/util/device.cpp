#include "util/device.h"

#include <ATen/Context.h>

#include "util/errors.h"

namespace st {

c10::Device select_device(DeviceChoice choice, int local_device) {
  const bool have_gpu = at::hasCUDA() && at::getNumGPUs() > 0;
  if (choice == DeviceChoice::cpu || (choice == DeviceChoice::automatic && !have_gpu)) return c10::Device(c10::kCPU);
  if (!have_gpu) {
    throw ConfigError("device 'cuda' requested, but this build's libtorch has no CUDA or no GPU "
                      "is visible; use --device cpu or a CUDA build (docs/testing.md)");
  }
  const int count = static_cast<int>(at::getNumGPUs());
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(local_device % count));
}

}  // namespace st
