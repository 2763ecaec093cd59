// GpuInfo from the CUDA runtime and NCCL (compiled only when ST_HAVE_CUDA).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "util/gpu_info.h"

namespace st {

GpuInfo query_gpu_info() {
  GpuInfo info;
  info.compiled = true;
  cudaRuntimeGetVersion(&info.cuda_runtime_version);
  cudaDriverGetVersion(&info.cuda_driver_version);
  ncclGetVersion(&info.nccl_version);
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    info.problem = std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc);
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return info;
  }
  for (int device = 0; device < count; ++device) {
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, device) == cudaSuccess) {
      info.devices.emplace_back(properties.name);
    }
  }
  return info;
}

}  // namespace st
